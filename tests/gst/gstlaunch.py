"""What the gst-launch-based tests share."""
import os


def gst_launch_env():
    """The environment to start gst-launch-1.0 in: this one, plus, when the
    plugin was built with ASan/UBSan (meson's GPP_SANITIZER_PRELOAD), their
    runtime preloaded, which must come first in a program not built with
    them."""
    env = dict(os.environ)
    if env.get("GPP_SANITIZER_PRELOAD"):
        env["LD_PRELOAD"] = env["GPP_SANITIZER_PRELOAD"]
    return env
