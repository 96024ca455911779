# Sourced by make-image.sh and test-deb.sh: the Debian release to build a root of and the apt sources
# for mmdebstrap, taken from this machine, so a root has the libraries the .deb was built against.
#   suite     the host's codename (SUITE overrides)
#   mirrors   mmdebstrap's source lines: the host's Debian mirror (SUITE, SUITE-updates) and its security
#             mirror (SUITE-security), from /etc/apt/sources.list* (deb822 or one-line); empty, when the
#             host names no Debian mirror, for mmdebstrap's own default
. /etc/os-release
suite=${SUITE:-$VERSION_CODENAME}
host_uris=$( { cat /etc/apt/sources.list /etc/apt/sources.list.d/*.list /etc/apt/sources.list.d/*.sources 2>/dev/null || true; } \
    | sed -n 's/^URIs: *//p; s/^deb  *\(\[[^]]*\] *\)\{0,1\}\([a-z]*:\/\/[^ ]*\) .*/\2/p' | tr ' ' '\n')
mirror=$(echo "$host_uris" | grep -m1 '/debian/*$' || true)
security=$(echo "$host_uris" | grep -m1 '/debian-security/*$' || true)
mirrors=()
if [ -n "$mirror" ]; then
    mirrors=("deb $mirror $suite main" "deb $mirror $suite-updates main")
    [ -z "$security" ] || mirrors+=("deb $security $suite-security main")
fi
mirror_name=${mirror:-mmdebstrap\'s default mirror}
