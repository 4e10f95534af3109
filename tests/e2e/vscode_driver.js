// Drives a real VS Code (code-server's workbench) in Debian's Chromium through playwright-core, for
// tests/e2e/test_vscode_editor.py. The test owns code-server and the files; this process owns only the browser.
//
// Protocol: one JSON request per line on stdin, {"id", "cmd", "args"}; one JSON answer per line on stdout,
// {"id", "ok": true, "value"} or {"id", "ok": false, "error"}. Closing stdin closes the browser and exits.
// Every wait is for an event in the page (an element, a text), with an upper bound given by the test.
'use strict';
const path = require('path');
const readline = require('readline');

const TOOLS = process.env.INFILL_EDITOR_NODE_TOOLS;
const { chromium } = require(path.join(TOOLS, 'node_modules', 'playwright-core'));

/** The Infill status bar item: VS Code gives it the id `<extension id>.<item id>` (infill.infill + infill.status). */
const STATUS = '[id="infill.infill.infill.status"]';
/** Inline suggestions: the first line is injected text with a class containing `ghost-text`, further lines are a
 * view zone with class `ghost-text`. */
const GHOST = '.editor-group-container .monaco-editor [class*="ghost-text"]';
const NOTEBOOK_GHOST = '.notebook-editor .monaco-editor [class*="ghost-text"]';

let browser;
let page;
const external = [];
const pageErrors = [];

const commands = {
    async launch({ url, chromium: executablePath, home, width, height }) {
        browser = await chromium.launch({
            executablePath, headless: true, env: { ...process.env, HOME: home },
            args: ['--no-sandbox', '--disable-dev-shm-usage', '--disable-gpu', '--no-first-run',
                   '--disable-background-networking', '--disable-component-update', '--disable-sync',
                   '--disable-default-apps', '--host-resolver-rules=MAP * ~NOTFOUND , EXCLUDE 127.0.0.1'],
        });
        page = await browser.newPage({ viewport: { width, height } });
        page.on('request', (r) => {
            const u = r.url();
            if (!/^(https?:\/\/127\.0\.0\.1[:/]|wss?:\/\/127\.0\.0\.1[:/]|data:|blob:|vscode-)/.test(u)) {
                external.push(u);
            }
        });
        page.on('pageerror', (e) => pageErrors.push(String(e).slice(0, 300)));
        await page.goto(url, { waitUntil: 'domcontentloaded' });
        await page.waitForSelector('.monaco-workbench', { timeout: 120000 });
        return browser.version();
    },

    /** Opens a workspace file from the explorer and waits until the editor shows `contains` (null: until its tab is
     * the active one). */
    async open({ name, contains, timeout }) {
        const row = page.locator('.explorer-folders-view .monaco-list-row').filter({
            has: page.locator('.label-name', { hasText: new RegExp(`^${name.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}$`) }),
        });
        await row.first().waitFor({ timeout });
        await row.first().dblclick();
        if (contains === null) {  // not a text editor (a notebook): its tab only
            await page.waitForFunction((name) => document.querySelector('.tabs-container .tab.active')
                ?.getAttribute('aria-label')?.startsWith(name), name, { timeout });
            return true;
        }
        await page.waitForFunction(({ name, contains }) => {
            const tab = document.querySelector('.tabs-container .tab.active');
            const lines = document.querySelector('.editor-group-container .monaco-editor .view-lines');
            return tab && tab.getAttribute('aria-label')?.startsWith(name)
                && lines && lines.textContent.replace(/\u00a0/g, ' ').includes(contains);
        }, { name, contains }, { timeout });
        await page.locator('.editor-group-container .monaco-editor .view-lines').first().click();
        return true;
    },

    /** Whether an element `selector` matches is visible now (the editor's find widget: `.find-widget.visible`). */
    async visible({ selector }) {
        return page.locator(selector).first().isVisible();
    },

    /** Clicks the first element `selector` matches. */
    async click({ selector, timeout }) {
        await page.locator(selector).first().click({ timeout });
        return true;
    },

    async type({ text }) {
        await page.keyboard.type(text);
        return true;
    },

    async press({ key }) {
        await page.keyboard.press(key);
        return true;
    },

    /** Waits for a non-empty inline suggestion and returns its text (lines joined with \n). `notebook`: in a
     * notebook's cell (the notebook editor is drawn in an overlay, outside the editor group's DOM). */
    async ghost({ timeout, notebook }) {
        const sel = notebook ? NOTEBOOK_GHOST : GHOST;
        await page.waitForFunction((sel) => [...document.querySelectorAll(sel)]
            .some((e) => e.textContent.replace(/\u00a0/g, ' ').trim().length > 0), sel, { timeout });
        return currentGhost(sel);
    },

    /** The inline suggestion shown now, '' when none. */
    async currentGhost() {
        return currentGhost();
    },

    /** Waits until no inline suggestion is shown (after Tab or Escape). */
    async noGhost({ timeout }) {
        await page.waitForFunction((sel) => document.querySelectorAll(sel).length === 0, GHOST, { timeout });
        return true;
    },

    /** Waits until the Infill status item shows the codicon `icon` (check, error, circle-slash, loading…);
     * returns its accessible label (the server's status message). */
    async status({ icon, timeout }) {
        await page.waitForFunction(({ sel, icon }) => {
            const item = document.querySelector(sel);
            return item && (!icon || item.querySelector(`.codicon-${icon}`) !== null);
        }, { sel: STATUS, icon }, { timeout });
        return statusNow();
    },

    async statusNow() {
        return statusNow();
    },

    /** Runs a command from the command palette by its title, as a user would. */
    async command({ title, timeout }) {
        await page.keyboard.press('F1');
        const input = page.locator('.quick-input-widget .quick-input-box input');
        await input.waitFor({ timeout });
        await input.fill(`>${title}`);
        const row = page.locator('.quick-input-widget .monaco-list-row', { hasText: title }).first();
        await row.waitFor({ timeout });
        await page.waitForFunction((title) => {
            const first = document.querySelector('.quick-input-widget .monaco-list-row.focused');
            return first && first.textContent.includes(title);
        }, title, { timeout });
        await page.keyboard.press('Enter');
        await page.locator('.quick-input-widget').waitFor({ state: 'hidden', timeout });
        return true;
    },

    /** Flips a boolean setting in the Settings editor (found by searching for `query`); returns its new value. */
    async toggleSetting({ query, timeout }) {
        await commands.command({ title: 'Preferences: Open Settings (UI)', timeout });
        const search = page.locator('.settings-editor .settings-header .suggest-input-container textarea');
        await search.waitFor({ timeout });
        await search.focus();
        await page.keyboard.type(query);
        const checkbox = page.locator('.settings-editor .settings-tree-container .setting-item-bool .setting-value-checkbox');
        await page.waitForFunction(() =>
            document.querySelectorAll('.settings-editor .settings-tree-container .setting-item-bool').length === 1,
            null, { timeout });
        const before = await checkbox.getAttribute('aria-checked');
        await checkbox.click();
        await page.waitForFunction((before) => document.querySelector(
            '.settings-editor .settings-tree-container .setting-item-bool .setting-value-checkbox')
            ?.getAttribute('aria-checked') !== before, before, { timeout });
        return (await checkbox.getAttribute('aria-checked')) === 'true';
    },

    /** Waits for the suggestion widget to show and returns the label of its selected row. */
    async suggestWidget({ timeout }) {
        const row = page.locator('.editor-widget.suggest-widget.visible .monaco-list-row.focused .label-name');
        await row.first().waitFor({ timeout });
        return (await row.first().textContent()).trim();
    },

    async screenshot({ file }) {
        await page.screenshot({ path: file });
        return file;
    },

    /** The status bar's items as the user sees them, for failure messages. */
    async statusBar() {
        return page.evaluate(() => [...document.querySelectorAll('.statusbar-item')]
            .map((e) => `${e.id}: ${e.textContent.trim()} [${e.getAttribute('aria-label') ?? ''}] `
                + [...e.querySelectorAll('.codicon')].map((c) => c.className).join(' ')));
    },

    /** The ghost text elements' HTML, for failure messages. */
    async ghostHtml() {
        return page.evaluate((sel) => [...document.querySelectorAll(sel)].map((e) => e.outerHTML), GHOST);
    },

    /** The editor's lines as drawn, top to bottom: the text (injected text such as decoration `after` content
     * included), the content of CSS ::before/::after decorations, and the text of spans drawn struck through
     * (next-edit removals). For next-edit decorations (tests/e2e/test_vscode_next_edit.py). */
    async editorLines() {
        return page.evaluate(() => {
            const root = document.querySelector('.editor-group-container .monaco-editor .view-lines');
            if (!root) {
                return [];
            }
            const clean = (t) => t.replace(/\u00a0/g, ' ');
            const pseudo = (e, which) => {
                const c = getComputedStyle(e, which).content;
                return c && c !== 'none' && c !== 'normal' ? clean(c.replace(/^"|"$/g, '')) : '';
            };
            return [...root.querySelectorAll('.view-line')]
                .map((line) => ({ top: parseFloat(line.style.top) || 0, line }))
                .sort((a, b) => a.top - b.top)
                .map(({ line }) => {
                    const spans = [...line.querySelectorAll('span')];
                    return {
                        text: clean(line.textContent),
                        pseudo: spans.flatMap((e) => [pseudo(e, '::before'), pseudo(e, '::after')]).filter(Boolean),
                        struck: spans.filter((e) => e.children.length === 0
                            && getComputedStyle(e).textDecorationLine.includes('line-through')).map((e) => clean(e.textContent)),
                    };
                });
        });
    },

    async report() {
        return { external, pageErrors };
    },
};

async function currentGhost(selector = GHOST) {
    return page.evaluate((sel) => {
        // The first line is injected text (one span, several when it is long) after the cursor; further lines are a
        // view zone below it, a block whose rendered text has one line per row.
        const all = [...document.querySelectorAll(sel)];
        const blocks = all.filter((e) => e.classList.contains('ghost-text'));
        const first = all.filter((e) => !blocks.some((b) => b.contains(e)));
        return (first.map((e) => e.textContent).join('')
            + blocks.map((b) => '\n' + b.innerText.replace(/\n$/, '')).join('')).replace(/\u00a0/g, ' ');
    }, selector);
}

async function statusNow() {
    return page.evaluate((sel) => {
        const item = document.querySelector(sel);
        if (!item) {
            return null;
        }
        const icon = [...item.querySelectorAll('.codicon')].map((e) => [...e.classList]
            .find((c) => c.startsWith('codicon-') && c !== 'codicon-modifier-spin'))[0]?.slice('codicon-'.length) ?? null;
        const button = item.querySelector('[aria-label]') ?? item;
        return { icon, text: item.textContent.trim(), label: button.getAttribute('aria-label') ?? '' };
    }, STATUS);
}

const rl = readline.createInterface({ input: process.stdin });
let queue = Promise.resolve();
rl.on('line', (line) => {
    queue = queue.then(async () => {
        const { id, cmd, args } = JSON.parse(line);
        let answer;
        try {
            if (!commands[cmd]) {
                throw new Error(`unknown command ${cmd}`);
            }
            answer = { id, ok: true, value: await commands[cmd](args ?? {}) };
        } catch (error) {
            answer = { id, ok: false, error: String(error && error.stack || error).slice(0, 4000) };
        }
        process.stdout.write(JSON.stringify(answer) + '\n');
    });
});
rl.on('close', () => {
    queue.then(async () => {
        if (browser) {
            await browser.close();
        }
        process.exit(0);
    });
});
