"""What the gst-launch-based tests share."""
import os
import sys


def gst_launch_env():
    """The environment to start gst-launch-1.0 in: this one, plus, when the
    plugin was built with ASan/UBSan (meson's GPP_SANITIZER_PRELOAD), their
    runtime preloaded, which must come first in a program not built with
    them."""
    env = dict(os.environ)
    if env.get("GPP_SANITIZER_PRELOAD"):
        env["LD_PRELOAD"] = env["GPP_SANITIZER_PRELOAD"]
    return env


def mode_test_args(doc):
    """The arguments of a test run as `TEST DATA GST_LAUNCH [MODE...]`:
    (DATA, GST_LAUNCH, the modes, cpu by default), or None after printing
    `doc` when they are missing."""
    if len(sys.argv) < 3:
        print(doc)
        return None
    return sys.argv[1], sys.argv[2], sys.argv[3:] or ["cpu"]
