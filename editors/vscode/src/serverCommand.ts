/**
 * Finding the `infill` executable before starting it, so a missing install gives install instructions instead of
 * the language client's generic "server crashed" loop.
 */
import * as fs from 'node:fs';
import * as path from 'node:path';

export const INSTALL_HINT =
    'Install the server with `pip install "infill-lsp[local]"` (or `pipx install "infill-lsp[local]"`), ' +
    'or set `infill.server.command` to the full path of the `infill` executable.';

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

export function missingServerMessage(command: string): string {
    return `Infill: the language server command \`${command}\` was not found. ${INSTALL_HINT}`;
}
