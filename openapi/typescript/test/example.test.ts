// The example runs as documented.

import assert from "node:assert/strict";
import { execFile } from "node:child_process";
import { test } from "node:test";
import { promisify } from "node:util";

import { tenancy } from "./env.js";

test("examples/quickstart runs against the server", async () => {
  const script = new URL("../examples/quickstart.js", import.meta.url).pathname;
  const { stdout } = await promisify(execFile)(process.execPath, [script], {
    env: { ...process.env, FERRY_COMPARTMENT: tenancy },
    timeout: 30_000,
  });
  assert.match(stdout, /^queue orders-/m);
  assert.match(stdout, /order: 3 × apple \(delivery 1\)/);
  assert.match(stdout, /order: 1 × pear \(delivery 1\)/);
  assert.match(stdout, /as expected: 404 NotAuthorizedOrNotFound \(opc-request-id \S+\)/);
  assert.match(stdout, /deleted: DELETE_QUEUE SUCCEEDED/);
});
