# Sourced by setup.sh, quickstart.sh and test.sh (`. scripts/venv.sh; infill_venv`): picks the virtual environment
# Infill is installed into, creates it when missing, and activates it for the calling script (VIRTUAL_ENV, PATH, and
# PYTHON = the environment's python).
#
#   an active virtual environment ($VIRTUAL_ENV)      used as it is
#   else $INFILL_VENV (default: .venv in the checkout)  reused when it works, else created with $PYTHON (default python3)
#
# Why a virtual environment: distribution Pythons are "externally managed" (PEP 668: Debian 12+, Ubuntu 23.04+,
# Fedora 38+, Homebrew) and pip refuses to install into them. Infill never uses --break-system-packages or sudo pip.
#
# Debian and Ubuntu ship venv's pip bootstrap (ensurepip) in a separate package, python3.X-venv. When it is missing,
# infill_venv installs it with apt-get where that is allowed (running as root, or sudo without a password; set
# INFILL_APT=never to forbid it), else creates the environment without pip and installs pip into it with the
# interpreter's own pip (pip --python). It says which of these it does.

_infill_say() { echo "infill setup: $*" >&2; }

# The apt package that carries ensurepip for interpreter $1 (python3.11-venv for a Python 3.11).
_infill_venv_package() { "$1" -c 'import sys; print("python%d.%d-venv" % sys.version_info[:2])'; }

# Runs apt-get as root: directly when we are root, through sudo when it needs no password; fails otherwise.
_infill_apt_get() {
  if [ "$(id -u)" -eq 0 ]; then
    DEBIAN_FRONTEND=noninteractive apt-get "$@"
  elif command -v sudo >/dev/null 2>&1 && sudo -n true 2>/dev/null; then
    sudo -n env DEBIAN_FRONTEND=noninteractive apt-get "$@"
  else
    return 1
  fi
}

_infill_apt_allowed() {
  [ "${INFILL_APT:-auto}" != never ] && command -v apt-get >/dev/null 2>&1 &&
    { [ "$(id -u)" -eq 0 ] || { command -v sudo >/dev/null 2>&1 && sudo -n true 2>/dev/null; }; }
}

_infill_dpkg_installed() {
  command -v dpkg-query >/dev/null 2>&1 && dpkg-query -W -f='${Status}' "$1" 2>/dev/null | grep -q 'install ok installed'
}

# Creates the virtual environment $2 with the interpreter $1.
_infill_create_venv() {
  local base=$1 venv=$2 package reason
  if ! command -v "$base" >/dev/null 2>&1; then
    _infill_say "the Python interpreter '$base' was not found; set PYTHON to a Python 3.10 or newer"
    return 1
  fi
  if ! "$base" -c 'import sys; sys.exit(sys.version_info < (3, 10))' 2>/dev/null; then
    _infill_say "$base is Python $("$base" -c 'import sys; print(sys.version.split()[0])' 2>&1); Infill needs 3.10 or newer (set PYTHON)"
    return 1
  fi
  if ! "$base" -c 'import venv' 2>/dev/null; then
    _infill_say "$base has no venv module; install your distribution's python3-venv package, or set PYTHON to another Python"
    return 1
  fi
  package=$(_infill_venv_package "$base")
  if ! "$base" -c 'import ensurepip' 2>/dev/null; then
    if _infill_dpkg_installed "$package"; then
      reason="$package is installed, yet $base has no ensurepip"
    elif _infill_apt_allowed; then
      _infill_say "$base cannot put pip into a virtual environment (no ensurepip): installing $package with apt-get"
      _infill_apt_get install -y -q --no-install-recommends --no-upgrade "$package" ||
        { _infill_apt_get update -q && _infill_apt_get install -y -q --no-install-recommends --no-upgrade "$package"; }
      reason="apt-get could not install $package"
    else
      reason="$package is not installed, and apt-get is not allowed here (needs root or password-less sudo; INFILL_APT=${INFILL_APT:-auto})"
    fi
  fi
  if "$base" -c 'import ensurepip' 2>/dev/null; then
    "$base" -m venv --clear "$venv" || return 1
    _infill_say "created the virtual environment $venv ($("$venv/bin/python" -V 2>&1), from $base)"
    return 0
  fi
  # No ensurepip: an environment without pip, then pip installed into it by the interpreter's own pip (--python
  # needs pip 22.3 or newer; Debian 12 has 23.0).
  if ! "$base" -m pip --python "$base" --version >/dev/null 2>&1; then
    _infill_say "$base cannot put pip into a virtual environment: it has no ensurepip ($reason) and no pip 22.3+ to do it instead."
    _infill_say "install the venv package and run this again:  sudo apt-get install $package"
    return 1
  fi
  _infill_say "$base has no ensurepip ($reason): creating $venv without pip and installing pip into it with" \
    "$base -m pip --python (to avoid this: sudo apt-get install $package)"
  "$base" -m venv --clear --without-pip "$venv" || return 1
  "$base" -m pip --python "$venv/bin/python" install --disable-pip-version-check -q pip || return 1
  _infill_say "created the virtual environment $venv ($("$venv/bin/python" -V 2>&1), from $base)"
}

# Sets VIRTUAL_ENV, PATH and PYTHON for the environment Infill lives in, creating it when needed.
# `infill_venv quiet` says nothing when it only reuses an environment.
infill_venv() {
  local venv quiet=${1:-}
  if [ -n "${VIRTUAL_ENV:-}" ]; then
    venv=$VIRTUAL_ENV
    if ! "$venv/bin/python" -m pip --version >/dev/null 2>&1; then
      _infill_say "the active virtual environment $venv has no working python with pip; deactivate it or repair it"
      return 1
    fi
    [ -n "$quiet" ] || _infill_say "using the active virtual environment $venv"
  else
    venv=${INFILL_VENV:-$PWD/.venv}
    case $venv in /*) ;; *) venv=$PWD/$venv ;; esac
    if [ -f "$venv/pyvenv.cfg" ] && "$venv/bin/python" -m pip --version >/dev/null 2>&1; then
      [ -n "$quiet" ] || _infill_say "reusing the virtual environment $venv ($("$venv/bin/python" -V 2>&1))"
    elif [ -e "$venv" ] && [ ! -f "$venv/pyvenv.cfg" ] && [ -n "$(ls -A "$venv" 2>/dev/null)" ]; then
      _infill_say "$venv exists and is not a virtual environment; move it away or set INFILL_VENV to another directory"
      return 1
    else
      [ ! -f "$venv/pyvenv.cfg" ] || _infill_say "the virtual environment $venv does not work (no python with pip); recreating it"
      _infill_create_venv "${PYTHON:-python3}" "$venv" || return 1
    fi
  fi
  export VIRTUAL_ENV=$venv
  export PATH="$venv/bin:$PATH"
  unset PYTHONHOME
  PYTHON=$venv/bin/python
}
