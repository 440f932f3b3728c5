// Builds the console into ../dist (index.html, console.js, console.css), which services/console embeds.
// The build is deterministic: the same sources and pinned versions give the same bytes (no timestamps, no
// source maps, sorted inputs), so `node build.mjs --check` can fail CI when the committed bundle is stale.
import { build } from "esbuild";
import { readFile, writeFile, mkdir } from "node:fs/promises";
import { fileURLToPath } from "node:url";
import { dirname, join } from "node:path";

const here = dirname(fileURLToPath(import.meta.url));
const out = join(here, "..", "dist");
const check = process.argv.includes("--check");

const result = await build({
  entryPoints: [join(here, "src", "main.tsx")],
  bundle: true,
  write: false,
  minify: true,
  format: "esm",
  target: ["es2022"],
  platform: "browser",
  jsx: "automatic",
  jsxImportSource: "preact",
  legalComments: "none",
  charset: "utf8",
  // The SDK is used from its source; its Node-only WebSocket (ws) is never loaded in a browser.
  alias: { "@ferry-mq/sdk": join(here, "..", "..", "..", "openapi", "typescript", "src", "index.ts") },
  external: ["ws"],
  define: { "process.env.NODE_ENV": '"production"' },
  logLevel: "warning",
});

const files = {
  "console.js": result.outputFiles[0].text,
  "console.css": await readFile(join(here, "src", "console.css"), "utf8"),
  "index.html": await readFile(join(here, "src", "index.html"), "utf8"),
};

if (check) {
  const stale = [];
  for (const [name, text] of Object.entries(files)) {
    const have = await readFile(join(out, name), "utf8").catch(() => null);
    if (have !== text) stale.push(name);
  }
  if (stale.length) {
    console.error(`services/console/dist is stale (${stale.join(", ")}): run make generate and commit`);
    process.exit(1);
  }
} else {
  await mkdir(out, { recursive: true });
  for (const [name, text] of Object.entries(files)) await writeFile(join(out, name), text);
}
