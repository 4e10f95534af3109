#!/usr/bin/env bash
# Installs the real-editor toolchain of tests/e2e/test_vscode_editor.py: Debian's Chromium (apt), code-server 4.96.4
# (VS Code 1.96.4 web + its Node server, from npm), playwright-core (drives Chromium) and @vscode/vsce (packages the
# extension). Everything comes from the package registries; nothing is fetched from GitHub.
# The tools go to $INFILL_EDITOR_TOOLS (default ~/.cache/infill/vscode-editor) and are reused by later runs: a second
# run only checks them (seconds). Without node/npm, or without root/sudo for the apt packages, it says so and exits 0:
# the test then skips with that reason.
# Recipe and the three offline traps it works around: ../shared/notes/vscode-real-editor/README.md (measured there).
set -euo pipefail
CODE_SERVER_VERSION=4.96.4
PLAYWRIGHT_VERSION=1.65.1
VSCE_VERSION=3.9.2
TOOLS=${INFILL_EDITOR_TOOLS:-${XDG_CACHE_HOME:-$HOME/.cache}/infill/vscode-editor}
say() { echo "vscode-editor.sh: $*" >&2; }

if ! command -v node >/dev/null 2>&1 || ! command -v npm >/dev/null 2>&1; then
    say "node and npm are not installed; the real VS Code test will skip"
    exit 0
fi

# --- apt: Chromium, fonts for readable screenshots, rg (seeds @vscode/ripgrep), headers/compiler for native modules
APT_PACKAGES=(chromium fonts-dejavu-core ripgrep libkrb5-dev g++ make python3)
missing=()
for p in "${APT_PACKAGES[@]}"; do dpkg -s "$p" >/dev/null 2>&1 || missing+=("$p"); done
if [ ${#missing[@]} -gt 0 ]; then
    if [ "$(id -u)" = 0 ]; then SUDO=(); elif command -v sudo >/dev/null 2>&1 && sudo -n true 2>/dev/null; then SUDO=(sudo -n);
    else say "needs root (or password-less sudo) to apt-get install ${missing[*]}; the real VS Code test will skip"; exit 0; fi
    if ! command -v apt-get >/dev/null 2>&1; then
        say "no apt-get to install ${missing[*]}; the real VS Code test will skip"; exit 0
    fi
    say "apt-get install ${missing[*]} (Chromium takes a minute)"
    "${SUDO[@]}" apt-get update -qq
    DEBIAN_FRONTEND=noninteractive "${SUDO[@]}" apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi
if [ ! -f /usr/include/node/node.h ]; then
    say "Node's headers (/usr/include/node) are missing; code-server's native modules cannot be built; the test will skip"
    exit 0
fi
mkdir -p "$TOOLS"

# --- code-server: version-named folder, so a version bump installs beside the old one instead of mixing them
CS=$TOOLS/code-server-$CODE_SERVER_VERSION
if [ ! -f "$CS/.installed" ]; then
    say "installing code-server $CODE_SERVER_VERSION into $CS (~2 minutes: it builds native modules)"
    rm -rf "$CS" && mkdir -p "$CS"
    (
        cd "$CS"
        export npm_config_nodedir=/usr            # node-gyp: headers from Debian's nodejs, no header download
        export npm_config_build_from_source=true  # argon2 / kerberos: no prebuilt binaries from GitHub
        # @vscode/ripgrep's postinstall downloads rg from GitHub unless its cache file exists: seed it with Debian's rg
        rgcache=$(node -e 'console.log(require("os").tmpdir())')/vscode-ripgrep-cache-1.15.9
        rgpack=$(mktemp -d)
        mkdir -p "$rgcache" && cp "$(command -v rg)" "$rgpack/rg"
        tar czf "$rgcache/ripgrep-v13.0.0-10-x86_64-unknown-linux-musl.tar.gz" -C "$rgpack" rg
        echo '{"name":"infill-code-server","version":"1.0.0","private":true}' > package.json
        npm install --ignore-scripts --no-audit --no-fund --loglevel=error "code-server@$CODE_SERVER_VERSION"
        # lib/vscode's shrinkwrap pins @vscode/proxy-agent to a GitHub commit; the registry tarball has the same integrity
        sw=node_modules/code-server/lib/vscode/npm-shrinkwrap.json
        registry=$(npm config get registry); registry=${registry%/}
        sed -i "s#\"resolved\": \"git+ssh://git@[^\"]*vscode-proxy-agent.git\#[0-9a-f]*\"#\"resolved\": \"$registry/@vscode/proxy-agent/-/proxy-agent-0.27.0.tgz\"#" "$sw"
        grep -q 'proxy-agent-0.27.0.tgz' "$sw"
        # now the install scripts: argon2's build and code-server's postinstall (npm install in lib/vscode[/extensions])
        npm rebuild --loglevel=error --unsafe-perm >rebuild.log 2>&1 || { tail -40 rebuild.log >&2; exit 1; }
        rm -rf "$rgpack" "$rgcache"
        test -x node_modules/code-server/lib/vscode/node_modules/@vscode/ripgrep/bin/rg
        # code-server writes under $HOME even for --version
        smoke=$(mktemp -d)
        HOME=$smoke XDG_CONFIG_HOME=$smoke XDG_DATA_HOME=$smoke node_modules/.bin/code-server --version >/dev/null
        rm -rf "$smoke"
    )
    touch "$CS/.installed"
fi

# --- playwright-core (drives the system Chromium; downloads no browser) and vsce (packages the .vsix)
NT=$TOOLS/node-tools-playwright-$PLAYWRIGHT_VERSION-vsce-$VSCE_VERSION
if [ ! -f "$NT/.installed" ]; then
    say "installing playwright-core $PLAYWRIGHT_VERSION and @vscode/vsce $VSCE_VERSION into $NT"
    rm -rf "$NT" && mkdir -p "$NT"
    echo '{"name":"infill-editor-tools","version":"1.0.0","private":true}' > "$NT/package.json"
    (cd "$NT" && npm install --no-audit --no-fund --loglevel=error "playwright-core@$PLAYWRIGHT_VERSION" "@vscode/vsce@$VSCE_VERSION")
    touch "$NT/.installed"
fi

# The test reads this file to find the tools (and skips, naming what is missing, when it is absent).
cat > "$TOOLS/tools.json" <<JSON
{"code_server": "$CS/node_modules/.bin/code-server", "node_tools": "$NT", "chromium": "$(command -v chromium)"}
JSON
say "real VS Code toolchain ready in $TOOLS"
