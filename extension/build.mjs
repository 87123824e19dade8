// Bundles the extension (out/extension.js) and the report view's script (media/dist/report.js) with esbuild,
// and lays out the shipped sample capture (media/sample/);
// with --tests, also the unit tests (out/test/*.test.js, run by `node --test out/test/`).
import { build } from "esbuild";
import { cpSync, readdirSync, rmSync } from "node:fs";
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
// The walkthrough's sample: a real capture recorded on an H200 and the script it ran (see media/walkthrough/).
const sample = path.join(root, "media/sample");
rmSync(sample, { recursive: true, force: true });
cpSync(path.join(root, "tests/fixtures/captures/sample"), path.join(sample, "capture"), { recursive: true });
cpSync(path.join(root, "scenarios/retained_references.py"), path.join(sample, "retained_references.py"));
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
