/**
 * Finding the `infill` executable before starting it, so a missing install gives install instructions instead of
 * the language client's generic "server crashed" loop.
 *
 * Lookup order (docs/editors.md): the `infill.server.command` setting when it names something other than the plain
 * `infill`; else `infill` on PATH; else `.venv/bin/infill` of the Infill checkout, which `bash scripts/setup.sh`
 * creates. The checkout is the one this extension sits in (editors/vscode), or, for a packaged .vsix, the one it was
 * built from (`out/checkout.json`, written by scripts/editors.sh).
 */
import * as fs from 'node:fs';
import * as path from 'node:path';

export const DEFAULT_COMMAND = 'infill';

export const INSTALL_HINT =
    'Run `bash scripts/setup.sh` in the Infill checkout (it installs into the checkout\'s .venv), or ' +
    '`pipx install "infill-lsp[local]"`, or set `infill.server.command` to the full path of the `infill` executable.';

function isExecutableFile(file: string): boolean {
    try {
        const stat = fs.statSync(file);
        if (!stat.isFile()) {
            return false;
        }
        if (process.platform === 'win32') {
            return true;
        }
        fs.accessSync(file, fs.constants.X_OK);
        return true;
    } catch {
        return false;
    }
}

/**
 * The absolute path `command` runs, or null. A command containing a path separator is taken as a path (relative to
 * `cwd`); a bare name is looked up in `envPath` like a shell would, with PATHEXT suffixes on Windows.
 */
export function resolveCommand(command: string, envPath: string | undefined, cwd: string = process.cwd(),
                               pathExt: string | undefined = process.env.PATHEXT): string | null {
    if (command.trim() === '') {
        return null;
    }
    const suffixes = process.platform === 'win32' ? ['', ...(pathExt ?? '.EXE;.CMD;.BAT').split(';')] : [''];
    if (command.includes('/') || command.includes(path.sep)) {
        const full = path.resolve(cwd, command);
        return suffixes.map((s) => full + s).find(isExecutableFile) ?? null;
    }
    for (const dir of (envPath ?? '').split(path.delimiter)) {
        if (dir === '') {
            continue;
        }
        for (const suffix of suffixes) {
            const candidate = path.join(dir, command + suffix);
            if (isExecutableFile(candidate)) {
                return candidate;
            }
        }
    }
    return null;
}

/** The `infill` a checkout's virtual environment holds (where scripts/setup.sh installs it). */
export function venvServer(checkout: string, platform: string = process.platform): string {
    return platform === 'win32'
        ? path.join(checkout, '.venv', 'Scripts', 'infill.exe')
        : path.join(checkout, '.venv', 'bin', 'infill');
}

function isCheckout(dir: string): boolean {
    return fs.existsSync(path.join(dir, 'pyproject.toml')) && fs.existsSync(path.join(dir, 'lsp_server'));
}

/**
 * The Infill checkouts this extension belongs to: the directory two levels above it when it runs from a checkout
 * (editors/vscode), and the checkout recorded in `out/checkout.json` when it was packaged there.
 */
export function checkoutRoots(extensionRoot: string = path.resolve(__dirname, '..', '..')): string[] {
    const roots: string[] = [];
    const add = (dir: string) => {
        const full = path.resolve(dir);
        if (isCheckout(full) && !roots.includes(full)) {
            roots.push(full);
        }
    };
    add(path.join(extensionRoot, '..', '..'));
    try {
        const recorded: unknown = JSON.parse(fs.readFileSync(path.join(extensionRoot, 'out', 'checkout.json'), 'utf8'));
        if (recorded && typeof recorded === 'object' && typeof (recorded as { root?: unknown }).root === 'string') {
            add((recorded as { root: string }).root);
        }
    } catch {
        // No record (not packaged by scripts/editors.sh) or an unreadable one: nothing to add.
    }
    return roots;
}

export interface ServerLookup {
    /** The executable to start, or null when none was found. */
    path: string | null;
    /** The places looked at, in order, for the message when nothing was found. */
    tried: string[];
}

/**
 * Finds the server: the configured command when it is not the plain default; else `infill` on PATH; else each
 * checkout's `.venv` (see the module comment).
 */
export function findServer(command: string, envPath: string | undefined, cwd: string | undefined,
                           checkouts: string[]): ServerLookup {
    if (command !== DEFAULT_COMMAND) {
        return { path: resolveCommand(command, envPath, cwd), tried: [`infill.server.command = ${command}`] };
    }
    const tried = ['`infill` on PATH'];
    const onPath = resolveCommand(command, envPath, cwd);
    if (onPath !== null) {
        return { path: onPath, tried };
    }
    for (const checkout of checkouts) {
        const candidate = venvServer(checkout);
        tried.push(candidate);
        if (isExecutableFile(candidate)) {
            return { path: candidate, tried };
        }
    }
    return { path: null, tried };
}

/** How the server is started, from the `infill.server.*` settings. */
export interface Launch {
    command: string;
    args: string[];
    env: Record<string, string>;
}

/**
 * The `infill.server.*` settings as the server is started with them, or what is wrong with them: settings.json can
 * hold any JSON there (VS Code only underlines a value of the wrong type), and a string where the list of arguments
 * belongs must give a message naming the setting, not a TypeError that leaves the extension half started.
 */
export function launchOf(command: unknown, args: unknown, env: unknown): Launch | { problem: string } {
    const wrong: string[] = [];
    if (typeof command !== 'string') {
        wrong.push(`\`infill.server.command\` must be a string, not ${JSON.stringify(command)}`);
    }
    if (!Array.isArray(args) || !args.every((arg) => typeof arg === 'string')) {
        wrong.push(`\`infill.server.args\` must be a list of strings, not ${JSON.stringify(args)}`);
    }
    if (typeof env !== 'object' || env === null || Array.isArray(env)
        || !Object.values(env).every((value) => typeof value === 'string')) {
        wrong.push(`\`infill.server.env\` must be an object of strings, not ${JSON.stringify(env)}`);
    }
    if (wrong.length > 0) {
        return { problem: `Infill: the language server was not started: ${wrong.join('; ')}.` };
    }
    return { command: command as string, args: args as string[], env: env as Record<string, string> };
}

export function missingServerMessage(lookup: ServerLookup): string {
    return `Infill: the language server was not found (looked at: ${lookup.tried.join(', ')}). ${INSTALL_HINT}`;
}
