// Bundles the extension (out/extension.js) and the report view's script (media/dist/report.js) with esbuild;
// with --tests, also the unit tests (out/test/*.test.js, run by `node --test out/test/`).
import { build } from "esbuild";
import { readdirSync } from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";

const here = path.dirname(fileURLToPath(import.meta.url));
const root = path.dirname(here);
const common = { bundle: true, sourcemap: true, logLevel: "warning", absWorkingDir: root };

await build({
    ...common,
    entryPoints: ["extension/src/extension.ts"],
    outfile: "out/extension.js",
    external: ["vscode"],
    format: "cjs",
    platform: "node",
    target: "node18",
    minify: true,
});
await build({
    ...common,
    entryPoints: ["extension/webview/report.ts"],
    outfile: "media/dist/report.js",
    format: "iife",
    platform: "browser",
    target: "es2020",
    minify: true,
    sourcemap: false,
});
if (process.argv.includes("--tests")) {
    const tests = readdirSync(path.join(here, "test")).filter((name) => name.endsWith(".test.ts"));
    await build({
        ...common,
        entryPoints: tests.map((name) => `extension/test/${name}`),
        outdir: "out/test",
        format: "cjs",
        platform: "node",
        target: "node18",
    });
}
