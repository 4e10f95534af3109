/** The extension's pure parts: settings sent to the server, the status bar mapping, partial acceptance, PATH lookup. */
import assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { describe, it } from 'node:test';

import { MAX_CHARS, yanksOf } from '../src/copies';
import { matchPartialAcceptance, OfferedItem } from '../src/partial';
import { checkoutRoots, findServer, launchOf, missingServerMessage, resolveCommand, venvServer } from '../src/serverCommand';
import { didChangeConfigurationParams, toServerSettings } from '../src/settings';
import { parseStatus, statusView } from '../src/status';

describe('toServerSettings', () => {
    it('drops client-only keys, unset values and tables left empty', () => {
        const raw = {
            server: { command: 'infill', args: ['serve', '--stdio'] },
            trace: { server: 'off' },
            enabled: false,
            completion: { kind: 'local', model: null, apiKeyEnv: undefined, local: { binary: null } },
            exclude: [],
            get: () => 1,
        };
        assert.deepEqual(toServerSettings(raw), { enabled: false, completion: { kind: 'local' }, exclude: [] });
    });

    it('wraps the settings under the `infill` section for didChangeConfiguration', () => {
        assert.deepEqual(didChangeConfigurationParams({ maxTokens: 8 }), { settings: { infill: { maxTokens: 8 } } });
        assert.deepEqual(toServerSettings(null), {});
    });
});

describe('status', () => {
    it('shows the loading percentage while starting', () => {
        const view = statusView(parseStatus({ kind: 'starting', message: 'Loading model', percent: 41.6 }));
        assert.match(view.text, /Infill 42%$/);
        assert.match(view.tooltip, /Loading model/);
        assert.equal(view.severity, 'normal');
    });

    it('turns an error status into an error item carrying the message and detail', () => {
        const view = statusView(parseStatus({ kind: 'error', message: 'llama-server exited', detail: 'see the log' }));
        assert.equal(view.severity, 'error');
        assert.match(view.tooltip, /llama-server exited[\s\S]*see the log/);
        assert.equal(view.label, 'Infill error: llama-server exited');
    });

    it('reports malformed notifications instead of ignoring them', () => {
        assert.equal(parseStatus({ kind: 'sleepy', message: 'x' }).kind, 'error');
        assert.match(parseStatus(42).message, /expected an object/);
    });
});

describe('matchPartialAcceptance', () => {
    const items: OfferedItem[] = [
        { insertText: 'return a + b', replaced: '', item: { id: 1 } },
        { insertText: '    return a - b', replaced: '    ', item: { id: 2 } },
    ];

    it('finds the item the accepted text came from and counts from the start of its insertText', () => {
        assert.deepEqual(matchPartialAcceptance(items, 'return a '), { item: { id: 1 }, acceptedLength: 9 });
        assert.deepEqual(matchPartialAcceptance(items, 'return a - '), { item: { id: 2 }, acceptedLength: 15 });
    });

    it('matches nothing when the text is not a prefix of any suggestion', () => {
        assert.equal(matchPartialAcceptance(items, 'print('), null);
        assert.equal(matchPartialAcceptance(items, ''), null);
    });
});

describe('resolveCommand', () => {
    it('finds an executable on PATH and ignores non-executable files', () => {
        const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'infill-path-'));
        try {
            const exe = path.join(dir, 'infill');
            fs.writeFileSync(exe, '#!/bin/sh\n');
            fs.chmodSync(exe, 0o755);
            fs.writeFileSync(path.join(dir, 'plain'), '');
            assert.equal(resolveCommand('infill', `/nonexistent${path.delimiter}${dir}`), exe);
            assert.equal(resolveCommand(exe, ''), exe);
            assert.equal(resolveCommand('plain', dir), process.platform === 'win32' ? path.join(dir, 'plain') : null);
            assert.equal(resolveCommand('missing-infill', dir), null);
        } finally {
            fs.rmSync(dir, { recursive: true, force: true });
        }
    });
});

describe('launchOf', () => {
    it('takes the server settings as they are when their types are right', () => {
        assert.deepEqual(launchOf('infill', ['serve', '--stdio'], { KEY: 'v' }),
            { command: 'infill', args: ['serve', '--stdio'], env: { KEY: 'v' } });
    });

    it('names each setting of the wrong type instead of failing later on it', () => {
        // settings.json may hold anything: `"infill.server.args": "serve --stdio"` made activation fail with
        // "args.join is not a function" and left the status item saying the server is not running.
        const launch = launchOf(['python', '-m'], 'serve --stdio', ['A=1']);
        assert.ok('problem' in launch);
        assert.match(launch.problem, /`infill\.server\.command` must be a string, not \["python","-m"\]/);
        assert.match(launch.problem, /`infill\.server\.args` must be a list of strings, not "serve --stdio"/);
        assert.match(launch.problem, /`infill\.server\.env` must be an object of strings, not \["A=1"\]/);
        for (const [command, args, env, setting] of [
            ['infill', ['serve', 3], {}, 'args'], ['infill', null, {}, 'args'], ['infill', [], { A: 1 }, 'env'],
            ['infill', [], null, 'env'], [null, [], {}, 'command']] as const) {
            const wrong = launchOf(command, args, env);
            assert.ok('problem' in wrong && wrong.problem.includes(`infill.server.${setting}\``), setting);
        }
    });
});

describe('findServer', () => {
    /** A fake checkout holding editors/vscode and a .venv with an executable `infill`, plus a PATH directory. */
    function layout(): { root: string; checkout: string; extension: string; venvInfill: string; pathDir: string } {
        const root = fs.mkdtempSync(path.join(os.tmpdir(), 'infill-lookup-'));
        const checkout = path.join(root, 'checkout');
        const extension = path.join(checkout, 'editors', 'vscode');
        fs.mkdirSync(path.join(extension, 'out'), { recursive: true });
        fs.mkdirSync(path.join(checkout, 'lsp_server'));
        fs.writeFileSync(path.join(checkout, 'pyproject.toml'), '');
        const venvInfill = venvServer(checkout);
        fs.mkdirSync(path.dirname(venvInfill), { recursive: true });
        fs.writeFileSync(venvInfill, '#!/bin/sh\n');
        fs.chmodSync(venvInfill, 0o755);
        const pathDir = path.join(root, 'bin');
        fs.mkdirSync(pathDir);
        return { root, checkout, extension, venvInfill, pathDir };
    }

    it('takes infill on PATH first, then the checkout .venv, and names the places it tried', () => {
        const { root, checkout, extension, venvInfill, pathDir } = layout();
        try {
            const roots = checkoutRoots(extension);
            assert.deepEqual(roots, [checkout]);
            // Not on PATH: the checkout's .venv.
            const fromVenv = findServer('infill', pathDir, undefined, roots);
            assert.deepEqual(fromVenv, { path: venvInfill, tried: ['`infill` on PATH', venvInfill] });
            // On PATH: that one wins.
            const onPath = path.join(pathDir, 'infill');
            fs.writeFileSync(onPath, '#!/bin/sh\n');
            fs.chmodSync(onPath, 0o755);
            assert.equal(findServer('infill', pathDir, undefined, roots).path, onPath);
            // Neither: the message lists both places.
            fs.rmSync(onPath);
            fs.rmSync(venvInfill);
            const missing = findServer('infill', pathDir, undefined, roots);
            assert.equal(missing.path, null);
            const message = missingServerMessage(missing);
            assert.match(message, /`infill` on PATH/);
            assert.ok(message.includes(venvInfill), message);
            assert.match(message, /bash scripts\/setup\.sh/);
        } finally {
            fs.rmSync(root, { recursive: true, force: true });
        }
    });

    it('uses a configured command as it is, without falling back', () => {
        const { root, checkout, pathDir } = layout();
        try {
            const mine = path.join(root, 'my-infill');
            fs.writeFileSync(mine, '#!/bin/sh\n');
            fs.chmodSync(mine, 0o755);
            assert.deepEqual(findServer(mine, pathDir, undefined, [checkout]),
                { path: mine, tried: [`infill.server.command = ${mine}`] });
            const absent = findServer(path.join(root, 'nope'), pathDir, undefined, [checkout]);
            assert.equal(absent.path, null);
            assert.match(missingServerMessage(absent), /infill\.server\.command = .*nope/);
        } finally {
            fs.rmSync(root, { recursive: true, force: true });
        }
    });

    it('finds the checkout a packaged extension was built from (out/checkout.json)', () => {
        const { root, checkout } = layout();
        try {
            // An installed .vsix lives outside any checkout, e.g. ~/.vscode/extensions/infill.infill-0.1.0.
            const installed = path.join(root, 'extensions', 'infill.infill-0.1.0');
            fs.mkdirSync(path.join(installed, 'out'), { recursive: true });
            assert.deepEqual(checkoutRoots(installed), []);
            fs.writeFileSync(path.join(installed, 'out', 'checkout.json'), JSON.stringify({ root: checkout }));
            assert.deepEqual(checkoutRoots(installed), [checkout]);
            fs.writeFileSync(path.join(installed, 'out', 'checkout.json'), '{not json');
            assert.deepEqual(checkoutRoots(installed), []);
        } finally {
            fs.rmSync(root, { recursive: true, force: true });
        }
    });

    it('knows the extension it runs from sits in this repository', () => {
        // The compiled test runs from editors/vscode/out/test: the default root is the real checkout.
        const repo = path.resolve(__dirname, '..', '..', '..', '..');
        assert.ok(checkoutRoots().includes(repo), `${checkoutRoots().join(', ')} lacks ${repo}`);
    });
});

describe('yanksOf', () => {
    it('reports non-empty selections with their range and skips blank or huge ones', () => {
        const selection = (text: string) => ({ text, startLine: 2, startCharacter: 0, endLine: 3, endCharacter: 4 });
        const yanks = yanksOf('file:///w/a.ts', [selection('const x = 1;\nx++'), selection('  \n'),
            selection('y'.repeat(MAX_CHARS + 1))]);
        assert.deepEqual(yanks, [{ textDocument: { uri: 'file:///w/a.ts' }, text: 'const x = 1;\nx++',
            range: { start: { line: 2, character: 0 }, end: { line: 3, character: 4 } } }]);
    });
    it('keeps the extension-only `editor` settings away from the server', () => {
        assert.deepEqual(toServerSettings({ editor: { sendCopies: true }, enabled: true }), { enabled: true });
    });
});
