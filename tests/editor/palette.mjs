// The command palette, driven as a user drives it: shared by the editor end-to-end scripts.

/**
 * Runs a command from the palette by its title. A slow machine can close the palette under us (the focus
 * moving as an editor closes, a webview taking it): it is opened again, at most twice, after the focus is
 * given back to the workbench.
 */
export async function runCommand(page, title, { stepTimeoutMs, log = console.log } = {}) {
    const attempts = 3;
    for (let attempt = 1; ; attempt++) {
        const last = attempt === attempts;
        try {
            await page.keyboard.press("Escape");
            await page.keyboard.press("F1");
            const input = page.locator(".quick-input-widget .quick-input-box input");
            await input.fill(`>${title}`, { timeout: last ? stepTimeoutMs : 5000 });
            // Click the exact entry: Enter would run whichever matching entry is first (recently used ones lead).
            await page.locator(".quick-input-list").getByText(title, { exact: true }).first()
                .click({ timeout: last ? stepTimeoutMs : 10_000 });
            return;
        } catch (error) {
            if (last) throw error;
            log(`the palette did not offer "${title}" (attempt ${attempt}): opening it again`);
            await page.keyboard.press("Escape");
            await page.locator(".part.statusbar").click({ position: { x: 2, y: 2 } });
        }
    }
}
