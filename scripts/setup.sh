#!/usr/bin/env bash
# Idempotent set-up for a fresh Debian/Ubuntu machine: system packages (as root), a Python venv
# with the project installed in editable mode, and Debian's Mininet made visible to that venv.
# Every make target that needs Python calls this first; a second run does (almost) nothing.
set -euo pipefail
cd "$(dirname "$0")/.."

VENV=${VENV:-.venv}
# pyproject.toml requires Python 3.11 or newer; python3.11, the version CI and mypy target, is
# taken when installed, else python3 (Debian 12's is 3.11, Ubuntu 24.04's 3.12)
if [ -z "${PYTHON:-}" ]; then
  if command -v python3.11 >/dev/null; then PYTHON=python3.11; else PYTHON=python3; fi
fi
APT_PACKAGES=(iproute2 mininet python3-venv python3-pip ethtool procps tcpdump iputils-ping
              clang libbpf-dev bpftool  # the eBPF target (p4switch/ebpf; bpftool: its bench)
              gcc python3-dev)  # ptf's netifaces has no wheel for Python 3.11: built on install

missing=()
for pkg in "${APT_PACKAGES[@]}"; do
  dpkg -s "$pkg" >/dev/null 2>&1 || missing+=("$pkg")
done
if [ ${#missing[@]} -gt 0 ]; then
  if [ "$(id -u)" -eq 0 ] && command -v apt-get >/dev/null; then
    echo "setup: installing system packages: ${missing[*]}"
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -qq
    apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
  else
    echo "setup: warning: missing system packages (${missing[*]}); run as root to install them;" \
         "tests that need them will be skipped" >&2
  fi
fi

# refuse an interpreter older than 3.11 in one line, before pip fails on requires-python with a
# page of output (an existing venv: the interpreter it was made with)
py="$PYTHON"; hint="install python3.11 or run with PYTHON=/path/to/python3.11"
if [ -x "$VENV/bin/python" ]; then py="$VENV/bin/python"; hint="remove $VENV and run again"; fi
if ! "$py" -c 'import sys; sys.exit(sys.version_info < (3, 11))' >/dev/null 2>&1; then
  ver=$("$py" -c 'import sys; print("is Python %d.%d" % sys.version_info[:2])' 2>/dev/null \
        || echo "does not run")
  echo "setup: p4fabric needs Python 3.11 or newer and $py $ver: $hint" >&2
  exit 1
fi

if [ ! -x "$VENV/bin/python" ]; then
  echo "setup: creating $VENV"
  "$PYTHON" -m venv "$VENV"
fi

# P4FABRIC_EXTRAS: the optional dependencies wanted beyond the runtime (make test: dev,sweep —
# the test tools and Ray, 240 MB that make demo does not use). The stamp lists the extras
# installed; pip runs when pyproject.toml is newer than it or a wanted extra is missing, and
# then installs every extra the venv had as well, so none is left at an older pin.
stamp="$VENV/.p4fabric-installed"
want=${P4FABRIC_EXTRAS:-}
have=$(cat "$stamp" 2>/dev/null || true)
extras=$(printf '%s\n' ${have//,/ } ${want//,/ } | sort -u | paste -sd, -)
install=0
if [ ! -f "$stamp" ] || [ pyproject.toml -nt "$stamp" ]; then install=1; fi
for e in ${want//,/ }; do
  case ",$have," in *",$e,"*) ;; *) install=1 ;; esac
done
if [ "$install" -eq 1 ]; then
  echo "setup: installing Python dependencies into $VENV${extras:+ (with $extras)}"
  "$VENV/bin/pip" install -q --disable-pip-version-check --upgrade pip >/dev/null 2>&1 || true
  "$VENV/bin/pip" install -q --disable-pip-version-check -e ".${extras:+[$extras]}"
  printf '%s\n' "$extras" > "$stamp"
fi

# Debian's mininet lives in the system interpreter's dist-packages. Expose only that package to
# the venv (a symlink dir on a .pth line), not the whole system site, so pinned deps stay pinned.
sitepkgs=$("$VENV/bin/python" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')
if ! "$VENV/bin/python" -c 'import mininet' >/dev/null 2>&1; then
  mnpkg=$(/usr/bin/python3 -c 'import mininet, os; print(os.path.dirname(mininet.__file__))' 2>/dev/null || true)
  if [ -n "$mnpkg" ]; then
    mkdir -p "$VENV/system-mininet"
    ln -sfn "$mnpkg" "$VENV/system-mininet/mininet"
    echo "$(cd "$VENV/system-mininet" && pwd)" > "$sitepkgs/p4fabric-mininet.pth"
  fi
fi
