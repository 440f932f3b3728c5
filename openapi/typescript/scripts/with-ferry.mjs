#!/usr/bin/env node
// Runs a command against a real ferry server: starts `ferry serve` on a private data directory (its own PostgreSQL
// cluster) and a free port, creates a tenancy and an administrator's token, runs the command with FERRY_ENDPOINT,
// FERRY_TOKEN, FERRY_TENANCY, FERRY_BIN and FERRY_DATA_DIR set, then stops the server (SIGTERM: ferry drains and
// stops its cluster), checks that no postgres is left, and removes the directory.
//
//   node scripts/with-ferry.mjs node --test build/test/
//
// FERRY_BIN names the ferry binary; unset, it is built from the repository with `go build`.

import { execFileSync, spawn } from "node:child_process";
import { chmodSync, mkdtempSync, readFileSync, rmSync, createWriteStream } from "node:fs";
import { createServer } from "node:net";
import { tmpdir } from "node:os";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";

const repo = resolve(dirname(fileURLToPath(import.meta.url)), "../../..");
const command = process.argv.slice(2);
if (command.length === 0) {
  console.error("usage: with-ferry.mjs COMMAND [ARG]...");
  process.exit(2);
}

const dataDir = mkdtempSync(join(tmpdir(), "ferry-sdk-test-"));
// ferry runs PostgreSQL as the 'postgres' user when it runs as root: that user must reach the directory.
chmodSync(dataDir, 0o755);
const log = join(dataDir, "ferry.log");

let bin = process.env.FERRY_BIN;
if (!bin) {
  bin = join(dataDir, "ferry");
  execFileSync("go", ["build", "-o", bin, "./cmd/ferry"], { cwd: repo, stdio: "inherit" });
}

const port = await freePort();
const endpoint = `http://127.0.0.1:${port}`;
const env = {
  ...process.env,
  FERRY_DATA_DIR: dataDir,
  FERRY_LISTEN: `127.0.0.1:${port}`,
  // No operators' metrics listener: its default port would clash with another ferry on this machine.
  FERRY_METRICS_LISTEN: "",
  FERRY_PUBLIC_URL: endpoint,
  FERRY_LOG_LEVEL: process.env.FERRY_LOG_LEVEL ?? "warn",
  // A throwaway cluster: no fsync, a small buffer pool (ferry's default is 1 GB).
  FERRY_PG_SETTINGS: "fsync=off,synchronous_commit=off,full_page_writes=off,shared_buffers=128MB",
};
delete env.FERRY_DATABASE_URL;
delete env.FERRY_JWT_HS256_SECRET;

const logStream = createWriteStream(log);
const server = spawn(bin, ["serve"], { env, stdio: ["ignore", "pipe", "pipe"] });
server.stdout.pipe(logStream, { end: false });
server.stderr.pipe(logStream, { end: false });
const exited = new Promise((resolve) => server.once("exit", (code, signal) => resolve({ code, signal })));

let status = 1;
let child;
const stopOnSignal = (signal) => {
  child?.kill(signal);
};
process.on("SIGINT", stopOnSignal);
process.on("SIGTERM", stopOnSignal);
try {
  await waitReady(endpoint, exited);
  const tenancy = JSON.parse(admin(["tenancy", "create", "--name", "sdk-test"])).id;
  const token = admin(["token", "--tenancy", tenancy, "--subject", "sdk-test", "--group", "Administrators", "--ttl", "2h"]).trim();
  child = spawn(command[0], command.slice(1), {
    stdio: "inherit",
    env: { ...env, FERRY_ENDPOINT: endpoint, FERRY_TOKEN: token, FERRY_TENANCY: tenancy, FERRY_BIN: bin },
  });
  status = await new Promise((resolve) => child.once("exit", (code, signal) => resolve(code ?? (signal ? 1 : 0))));
} catch (err) {
  console.error("with-ferry:", err instanceof Error ? err.message : err);
  status = 1;
} finally {
  if (!(await stop())) status = 1;
  if (status !== 0) {
    console.error(`with-ferry: ferry's log (${log}):`);
    try {
      console.error(readFileSync(log, "utf8").split("\n").slice(-40).join("\n"));
    } catch {}
  }
  rmSync(dataDir, { recursive: true, force: true });
}
process.exit(status);

function admin(args) {
  return execFileSync(bin, args, { env, encoding: "utf8", stdio: ["ignore", "pipe", "pipe"] });
}

// stop ends ferry serve with SIGTERM (it drains, then stops its PostgreSQL) and checks that postgres is gone.
async function stop() {
  const pidFile = join(dataDir, "postgres", "pgdata", "postmaster.pid");
  let postgres;
  try {
    postgres = Number(readFileSync(pidFile, "utf8").split("\n")[0]);
  } catch {}
  if (server.exitCode === null && server.signalCode === null) {
    server.kill("SIGTERM");
    const timeout = setTimeout(() => server.kill("SIGKILL"), 30_000);
    const { code, signal } = await exited;
    clearTimeout(timeout);
    if (signal === "SIGKILL") console.error("with-ferry: ferry serve did not stop within 30 s and was killed");
    else if (code !== 0) console.error(`with-ferry: ferry serve exited with ${code ?? signal}`);
  }
  logStream.end();
  if (postgres && alive(postgres)) {
    // Pdeathsig stops it when ferry dies; wait a little for that before calling it a leak.
    for (let i = 0; i < 50 && alive(postgres); i++) await new Promise((r) => setTimeout(r, 100));
    if (alive(postgres)) {
      console.error(`with-ferry: postgres (pid ${postgres}) was left running; killing it`);
      process.kill(postgres, "SIGKILL");
      return false;
    }
  }
  return true;
}

function alive(pid) {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return err.code === "EPERM";
  }
}

async function waitReady(url, exited) {
  let done = false;
  exited.then(() => (done = true));
  const deadline = Date.now() + 60_000;
  while (Date.now() < deadline) {
    if (done) throw new Error("ferry serve exited before it was ready");
    try {
      const r = await fetch(`${url}/readyz`);
      if (r.ok) return;
    } catch {}
    await new Promise((r) => setTimeout(r, 100));
  }
  throw new Error("ferry serve was not ready within 60 s");
}

function freePort() {
  return new Promise((resolve, reject) => {
    const s = createServer();
    s.once("error", reject);
    s.listen(0, "127.0.0.1", () => {
      const { port } = s.address();
      s.close(() => resolve(port));
    });
  });
}
