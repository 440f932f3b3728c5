// The server the tests run against: scripts/with-ferry.mjs starts it and sets these variables (npm test).

import { execFileSync } from "node:child_process";
import { randomBytes } from "node:crypto";

import { createClient, type Client, type ClientOptions, type Queue, type Schemas } from "@ferry-mq/sdk";

function required(name: string): string {
  const value = process.env[name];
  if (!value) throw new Error(`${name} is not set: run the tests with npm test (scripts/with-ferry.mjs)`);
  return value;
}

export const endpoint = required("FERRY_ENDPOINT");
export const token = required("FERRY_TOKEN");
/** The tenancy's OCID, also its root compartment's. */
export const tenancy = required("FERRY_TENANCY");

/** A client of the test tenancy's administrator. */
export function client(options: Partial<ClientOptions> = {}): Client {
  return createClient({ endpoint, token, ...options });
}

/** A name no other test uses. */
export function unique(prefix: string): string {
  return `${prefix}-${randomBytes(4).toString("hex")}`;
}

/** Creates a queue in the root compartment. */
export async function createQueue(
  ferry: Client,
  details: Partial<Schemas["CreateQueueDetails"]> = {},
): Promise<Queue> {
  const { data } = await ferry.POST("/20210201/queues", {
    body: { compartmentId: tenancy, displayName: unique("q"), ...details },
  });
  return data;
}

/** Runs a ferry admin command (on the test server's data directory); answers its output. */
export function ferryAdmin(...args: string[]): string {
  return execFileSync(required("FERRY_BIN"), args, { encoding: "utf8" });
}
