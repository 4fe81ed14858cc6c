# vm/lib.sh — helpers shared by the Mosaic VM harness scripts (sourced, never run).
#
# Provides logging, the cache location, the Debian mirror URI of this machine's own apt
# sources (no mirror host is ever written into the repository), a wait for the apt/dpkg
# locks, and the pinned kernel version.

MOSAIC_CACHE=${MOSAIC_CACHE:-/var/cache/mosaic}
VM_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
REPO_DIR=$(cd "$VM_DIR/.." && pwd)

# Kernel used when none is asked for (Debian trixie-backports cloud flavour, has sched_ext).
MOSAIC_KERNEL_DEFAULT=${MOSAIC_KERNEL_DEFAULT:-7.3.4+deb13-cloud-amd64}
# Oldest kernel accepted as a replacement when the pinned one has left the archive.
MOSAIC_KERNEL_MIN=7.2.13

# Print a message on stderr, prefixed with the script's name.
log() { echo "${0##*/}: $*" >&2; }

# Print an error on stderr and exit (status $2, default 1).
die() { echo "${0##*/}: error: $1" >&2; exit "${2:-1}"; }

# Print the distribution codename of this machine (e.g. bookworm).
host_codename() { . /etc/os-release && echo "${VERSION_CODENAME:?no VERSION_CODENAME in /etc/os-release}"; }

# Print the URI of the Debian archive that this machine's apt sources use for its release.
# Reads deb822 *.sources files (URIs:/Suites: stanzas) and classic 'deb URI suite ...' lines.
debian_mirror_uri() {
    local codename uri f
    codename=$(host_codename)
    for f in /etc/apt/sources.list.d/*.sources; do
        [[ -f $f ]] || continue
        uri=$(awk -v want="$codename" '
            function flush() {
                if (types ~ /(^| )deb( |$)/ && (" " suites " ") ~ (" " want " ") && enabled != "no" && uris != "")
                    { split(uris, u, " "); print u[1]; found = 1; exit }
                types = suites = uris = ""; enabled = "yes"
            }
            BEGIN { enabled = "yes" }
            /^[ \t]*$/ { flush(); next }
            /^[ \t]*#/ { next }
            { key = tolower($1); sub(/:$/, "", key); $1 = ""; sub(/^ +/, "")
              if (key == "types") types = $0; else if (key == "uris") uris = $0
              else if (key == "suites") suites = $0; else if (key == "enabled") enabled = tolower($0) }
            END { if (!found) flush() }' "$f")
        [[ -n $uri ]] && { echo "${uri%/}"; return 0; }
    done
    for f in /etc/apt/sources.list /etc/apt/sources.list.d/*.list; do
        [[ -f $f ]] || continue
        uri=$(awk -v want="$codename" '
            $1 == "deb" { i = 2; if ($2 ~ /^\[/) { while (i <= NF && $i !~ /\]$/) i++; i++ }
                          if ($(i + 1) == want) { print $i; exit } }' "$f")
        [[ -n $uri ]] && { echo "${uri%/}"; return 0; }
    done
    return 1
}

# True while some process holds one of the apt/dpkg lock files (checked in /proc/locks).
apt_locked() {
    local f ino
    for f in /var/lib/dpkg/lock-frontend /var/lib/dpkg/lock /var/lib/apt/lists/lock /var/cache/apt/archives/lock; do
        [[ -e $f ]] || continue
        ino=$(stat -c %i "$f")
        awk -v ino="$ino" '{ split($6, a, ":"); if (a[3] == ino) found = 1 } END { exit !found }' /proc/locks && return 0
    done
    return 1
}

# Wait (polling, without limit) until no apt/dpkg process holds a lock.
wait_apt_lock() {
    local said=
    while apt_locked; do
        [[ -n $said ]] || { log "waiting for another apt/dpkg run to finish..."; said=1; }
        sleep 2
    done
}

# Print the kernel release string for a version argument ("7.3.4" -> "7.3.4+deb13-cloud-amd64").
kernel_release_of() {
    case $1 in
        *-cloud-amd64) echo "$1" ;;
        *+deb*) echo "$1-cloud-amd64" ;;
        *) echo "$1" ;;   # bare upstream version: resolved by fetch-kernel against the archive
    esac
}

# Print the packages that scripts/deps.txt lists for the purposes "$@" (build, vm, qemu, ...).
deps_packages() {
    awk -v want=" $* " '!/^[[:space:]]*(#|$)/ && index(want, " " $1 " ") { print $2 }' \
        "$REPO_DIR/scripts/deps.txt"
}

# Print the packages of "$@" that are not installed.
missing_pkgs() {
    local p
    for p in "$@"; do
        dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || echo "$p"
    done
}

# Run apt-get with the lock wait and a non-interactive frontend.
apt_get() {
    wait_apt_lock
    DEBIAN_FRONTEND=noninteractive apt-get -o DPkg::Lock::Timeout=600 -q "$@"
}

# True if apt has package lists for suite $1 (any component).
have_lists() { compgen -G "/var/lib/apt/lists/*_dists_${1}_*Packages*" >/dev/null; }

# Install packages "$@" without their Recommends (refreshing the lists first if they are
# missing, and once more if the install fails on stale lists); apt's chatter goes to
# $MOSAIC_CACHE/apt-install.log, its errors to stderr.
apt_install() {
    local logf=$MOSAIC_CACHE/apt-install.log
    mkdir -p "$MOSAIC_CACHE"
    have_lists "$(host_codename)" || apt_get update >>"$logf" 2>&1 || true
    apt_get install -y --no-install-recommends "$@" >>"$logf" 2>&1 && return 0
    apt_get update >>"$logf" 2>&1 || true
    apt_get install -y --no-install-recommends "$@" >>"$logf" 2>&1 && return 0
    grep -E '^(E|W):' "$logf" | tail -5 >&2
    die "apt-get install $* failed (log: $logf)"
}
