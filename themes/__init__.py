"""The app's Textual themes (dark, light, high contrast) and its stylesheet, `app.tcss`.

Colours that mean something in fixloop (added and removed diff lines, a pass, a failure)
are theme variables, so the code, diff and history panes follow whichever theme is on.
"""

from __future__ import annotations

from pathlib import Path

from textual.theme import Theme

STYLESHEET = Path(__file__).with_name("app.tcss")

# What every theme must define beyond Textual's own palette; the defaults suit a dark theme.
VARIABLE_DEFAULTS = {
    "diff-added": "#9be9a8",
    "diff-added-background": "#1f3d2a",
    "diff-removed": "#ffabab",
    "diff-removed-background": "#4a1f24",
    "diff-hunk": "#8fb8ff",
    "changed-line": "#4ebf71",
}

DARK = Theme(
    name="fixloop-dark",
    primary="#4F9CF9",
    secondary="#7A8AA6",
    accent="#F5A524",
    warning="#F5A524",
    error="#F0616D",
    success="#4EBF71",
    foreground="#D8DEE9",
    background="#16181D",
    surface="#1E2128",
    panel="#272B34",
    dark=True,
    variables=dict(VARIABLE_DEFAULTS),
)

LIGHT = Theme(
    name="fixloop-light",
    primary="#1F5FBF",
    secondary="#5A6478",
    accent="#B25E00",
    warning="#9A5B00",
    error="#B3261E",
    success="#1E7B34",
    foreground="#1C2330",
    background="#F7F7F4",
    surface="#EDEDE8",
    panel="#E2E3DC",
    dark=False,
    variables={
        "diff-added": "#0F5323",
        "diff-added-background": "#D6F2DC",
        "diff-removed": "#7D1414",
        "diff-removed-background": "#F8D7D7",
        "diff-hunk": "#1F5FBF",
        "changed-line": "#1E7B34",
        "footer-key-foreground": "#1F5FBF",
    },
)

HIGH_CONTRAST = Theme(
    name="fixloop-high-contrast",
    primary="#FFFF00",
    secondary="#00FFFF",
    accent="#FF00FF",
    warning="#FFFF00",
    error="#FF5555",
    success="#00FF00",
    foreground="#FFFFFF",
    background="#000000",
    surface="#000000",
    panel="#1A1A1A",
    dark=True,
    luminosity_spread=0.0,
    text_alpha=1.0,
    variables={
        "diff-added": "#000000",
        "diff-added-background": "#00FF00",
        "diff-removed": "#000000",
        "diff-removed-background": "#FF5555",
        "diff-hunk": "#00FFFF",
        "changed-line": "#00FF00",
        "border": "#FFFFFF",
        "border-blurred": "#AAAAAA",
        "footer-key-foreground": "#FFFF00",
        "block-cursor-background": "#FFFF00",
        "block-cursor-foreground": "#000000",
    },
)

THEMES = (DARK, LIGHT, HIGH_CONTRAST)
# What `--theme` and the config's `theme` accept, besides any Textual theme's own name.
ALIASES = {
    "dark": DARK.name,
    "light": LIGHT.name,
    "high-contrast": HIGH_CONTRAST.name,
    "high_contrast": HIGH_CONTRAST.name,
    "contrast": HIGH_CONTRAST.name,
}
DEFAULT = DARK.name


def theme_name(choice: str | None) -> str:
    """The registered name for a user's choice: `dark` -> `fixloop-dark`; None -> the default."""
    if not choice:
        return DEFAULT
    return ALIASES.get(choice.strip().lower(), choice.strip())
