#!/bin/sh
# `meson install` of this build into a scratch DESTDIR: the plugin lands where
# pkg-config's gpupacket.pc says (GStreamer's own plugin folder for
# --prefix=/usr, <libdir>/gstreamer-1.0 otherwise), the installed plugin
# loads, and an application compiles against the headers with pkg-config's
# flags alone.
#   test_install.sh BUILD_DIR
set -eu
build=$1
dest=$(mktemp -d "${TMPDIR:-/tmp}/gpp-install-XXXXXX")
trap 'rm -rf "$dest"' EXIT
meson install -C "$build" --no-rebuild --quiet --destdir "$dest" > "$dest.log" 2>&1 ||
  { cat "$dest.log"; rm -f "$dest.log"; echo "meson install failed"; exit 1; }
rm -f "$dest.log"
pc=$(find "$dest" -name gpupacket.pc | head -n 1)
[ -n "$pc" ] || { echo "no gpupacket.pc installed"; exit 1; }
export PKG_CONFIG_PATH="$(dirname "$pc")"
pluginsdir=$(PKG_CONFIG_SYSROOT_DIR= pkg-config --variable=pluginsdir gpupacket)
export PKG_CONFIG_SYSROOT_DIR="$dest"
[ -f "$dest$pluginsdir/libgstgpupacket.so" ] ||
  { echo "the plugin is not in $pluginsdir (gpupacket.pc's pluginsdir)"; find "$dest" -name '*.so'; exit 1; }
echo "plugin: $pluginsdir/libgstgpupacket.so"
LD_PRELOAD="${GPP_SANITIZER_PRELOAD:-}" GST_PLUGIN_PATH_1_0="$dest$pluginsdir" \
  GST_REGISTRY_1_0="$dest/registry.bin" gst-inspect-1.0 gpupacketproc > "$dest/inspect.txt" 2>&1 ||
  { cat "$dest/inspect.txt"; echo "the installed plugin does not load"; exit 1; }
grep -q "dpi-select" "$dest/inspect.txt" || { echo "gst-inspect-1.0 shows another plugin"; exit 1; }
cat > "$dest/app.c" <<'C'
#include <gpupacket/flow-record.h>
#include <gpupacket/packet-batch.h>
#include <gpupacket/packet-result.h>
int main (void) { return sizeof (GppResult) == 128 && sizeof (GppPacketDesc) > 0 &&
    sizeof (GppFlowRecord) == 144 ? 0 : 1; }
C
# shellcheck disable=SC2046
cc $(pkg-config --cflags gpupacket) "$dest/app.c" -o "$dest/app" && "$dest/app" ||
  { echo "an application does not build with pkg-config --cflags gpupacket"; exit 1; }
echo "installed tree: plugin loads, headers compile ($(pkg-config --cflags gpupacket))"
