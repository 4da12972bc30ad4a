"""Whether the fonts a report language needs are installed (WeasyPrint draws boxes without them)."""

from __future__ import annotations

import shutil
import subprocess

FONT_LANGS = {"zh-TW": "zh-tw"}      # report language -> fontconfig language tag
INSTALL_HINT = "install one (Debian/Ubuntu: apt-get install fonts-noto-cjk)"


def missing_font(lang: str, fc_list: str | None = None) -> str | None:
    """A warning when no installed font covers ``lang``; None when one does, when the language needs
    no special font, or when fontconfig cannot be asked (then WeasyPrint's own fallback applies)."""
    tag = FONT_LANGS.get(lang)
    tool = fc_list or shutil.which("fc-list")
    if tag is None or tool is None:
        return None
    try:
        found = subprocess.run([tool, f":lang={tag}", "family"], capture_output=True, text=True, timeout=20,
                               check=False).stdout
    except (OSError, subprocess.SubprocessError):
        return None
    if found.strip():
        return None
    return (f"warning: no font for {lang} is installed (fc-list :lang={tag} finds none), so its text in "
            f"the PDF will show as boxes; {INSTALL_HINT}")
