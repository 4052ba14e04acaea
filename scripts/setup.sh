#!/usr/bin/env bash
# The system packages the tests and the PythonInterpreter tool need, beyond the Python venv: bubblewrap.
# Used by `make install` (once per install) and `.ci/run`; safe to run again (nothing is done when bwrap works).
#
#   scripts/setup.sh [PYTHON]   # PYTHON: an interpreter with sim_web installed, to report the sandbox the way
#                               # the package checks it (sim_web.tools.python.sandbox.sandbox_problem)
#
# Where bubblewrap is missing it is installed with apt-get, as root or with password-less sudo. Where that is not
# possible (no root, no apt-get, offline) this says what to run, and the sandbox tests are skipped with the reason;
# it never fails the install. SIM_WEB_SYSTEM_SETUP=0 skips the installing (the report still runs).
set -uo pipefail

note() { echo "setup: $*" >&2; }

sudo_prefix() {  # "" as root, "sudo -n" with password-less sudo; fails otherwise
    if [ "$(id -u)" = 0 ]; then echo ""; return 0; fi
    if command -v sudo >/dev/null 2>&1 && sudo -n true 2>/dev/null; then echo "sudo -n"; return 0; fi
    return 1
}

install_bubblewrap() {
    if ! command -v apt-get >/dev/null 2>&1; then
        note "bubblewrap is not installed and there is no apt-get here: install it with your package manager" \
             "(Fedora: dnf install bubblewrap, Arch: pacman -S bubblewrap)"
        return 1
    fi
    local sudo
    if ! sudo=$(sudo_prefix); then
        note "bubblewrap is not installed and installing it needs root: run \`sudo apt-get install bubblewrap\`"
        return 1
    fi
    note "installing bubblewrap: ${sudo:+$sudo }apt-get install bubblewrap"
    if ! { $sudo apt-get update -qq && DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq bubblewrap >/dev/null; }
    then
        note "apt-get could not install bubblewrap (offline? see the apt output above)"
        return 1
    fi
}

report() {  # the sandbox as the package sees it, else a plain bubblewrap probe
    local python="${1:-}" problem
    if [ -n "$python" ] && problem=$("$python" -c 'from sim_web.tools.python.sandbox import sandbox_problem
print(sandbox_problem() or "")' 2>/dev/null); then
        [ -z "$problem" ] && return 0
    elif bwrap --unshare-user --unshare-pid --unshare-net --ro-bind / / true 2>/dev/null; then
        return 0
    else
        problem="bubblewrap is missing or cannot create user namespaces here (\`unshare -Ur true\` must succeed)"
    fi
    note "WARNING: the PythonInterpreter sandbox cannot run here, so the tool refuses untrusted code and its tests" \
         "are skipped: $problem"
}

if ! command -v bwrap >/dev/null 2>&1 && [ "${SIM_WEB_SYSTEM_SETUP:-1}" != 0 ]; then
    install_bubblewrap || true
fi
report "${1:-}"
exit 0
