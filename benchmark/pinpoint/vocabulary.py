"""PinpointQA's category lists: target vocabulary, structural categories, supporting surfaces.

Target vocabulary (sec. 3.2, App. A.1): source-label variants of small portable or movable indoor
objects -- things held in a hand or usually put on a table -- matched EXACTLY after lower-casing.
The paper does not publish its 109 variants; this list is ours, built the same way: it keeps the
paper's three groupings verbatim (phone / smartphone / mobile phone -> phone; remote control / tv
remote / remote controller / remote / tv controller -> remote control; mouse pad / mousepad ->
mousepad), adds the small-object labels that ScanNet200 and ScanNet++ use (``computer mouse``,
``power strip``, ``headphones``, ...), and excludes furniture, architectural elements and
room-scale objects. A group is used only for counting categories and for treating two source
labels of one category as the same target (ambiguity, TPV negatives); questions keep the source
wording.

Structural categories (walls' openings, ceilings, fixtures) never enter a target's neighbourhood.
``floor`` and ``wall`` are NOT structural here: they can be the supporting surface (a shoe on the
floor, a clock attached to the wall), but never a reference (sec. 3.2: NRI excludes "floor and
wall categories").
"""

from __future__ import annotations

__all__ = [
    "VOCABULARY_GROUPS",
    "TARGET_VARIANTS",
    "category_of",
    "is_target_label",
    "STRUCTURAL",
    "FLOOR_WALL",
    "SUPPORT_TIERS",
    "support_tier",
    "WALL_LIKE",
    "is_structural",
    "is_floor_or_wall",
]

#: category -> its source-label variants (the three groups of App. A.1 first).
VOCABULARY_GROUPS: dict[str, tuple[str, ...]] = {
    "phone": ("phone", "smartphone", "mobile phone"),
    "remote control": ("remote control", "tv remote", "remote controller", "remote", "tv controller"),
    "mousepad": ("mouse pad", "mousepad"),
}
_SINGLE_VARIANTS = (
    "alarm clock",
    "backpack",
    "bag",
    "ball",
    "battery",
    "binder",
    "book",
    "bottle",
    "bowl",
    "calculator",
    "camera",
    "candle",
    "can",
    "charger",
    "clock",
    "coat hanger",
    "coffee mug",
    "comb",
    "computer mouse",
    "mouse",
    "cup",
    "cutting board",
    "dish soap",
    "earphones",
    "eraser",
    "flashlight",
    "folder",
    "fork",
    "game controller",
    "glasses",
    "glasses case",
    "glove",
    "hair dryer",
    "hat",
    "headphone case",
    "headphones",
    "highlighter",
    "jar",
    "kettle",
    "key",
    "keyboard",
    "knife",
    "laptop",
    "laptop bag",
    "lighter",
    "lotion",
    "marker",
    "mug",
    "nintendo switch",
    "notebook",
    "pan",
    "paper bag",
    "pen",
    "pen holder",
    "pencil",
    "pencil case",
    "plate",
    "pot",
    "power bank",
    "power strip",
    "purse",
    "router",
    "ruler",
    "scissors",
    "shoes",
    "slippers",
    "soap",
    "soap dispenser",
    "speaker",
    "sponge",
    "spoon",
    "spray bottle",
    "stapler",
    "sticky notes",
    "tablet",
    "table lamp",
    "tape",
    "tape measure",
    "telephone",
    "thermos",
    "tissue box",
    "tissue packet",
    "toothbrush",
    "toothpaste",
    "towel",
    "toy",
    "tray",
    "tripod",
    "umbrella",
    "usb stick",
    "vase",
    "wallet",
    "watch",
    "water bottle",
    "webcam",
    "wine glass",
    "headset",
    "cable",
    "hand sanitizer",
)
for _v in _SINGLE_VARIANTS:
    VOCABULARY_GROUPS.setdefault(_v, (_v,))

_CATEGORY: dict[str, str] = {v: cat for cat, variants in VOCABULARY_GROUPS.items() for v in variants}
#: every source-label variant, sorted.
TARGET_VARIANTS: tuple[str, ...] = tuple(sorted(_CATEGORY))

#: architectural elements and fixtures: never neighbours, never references.
STRUCTURAL = frozenset(
    {
        "ceiling",
        "ceiling light",
        "ceiling lamp",
        "light fixture",
        "door",
        "doors",
        "doorframe",
        "door frame",
        "window",
        "windows",
        "window frame",
        "column",
        "pillar",
        "beam",
        "stairs",
        "staircase",
        "step",
        "pipe",
        "pipes",
        "rail",
        "railing",
        "exhaust fan",
        "smoke detector",
        "sprinkler",
        "vent",
        "ceiling fan",
        "room",
        "object",
        "unknown",
        "remove",
        "split",
    }
)
FLOOR_WALL = frozenset({"floor", "wall", "walls", "carpet", "rug", "floor mat"})

#: surfaces a target is attached to rather than resting on.
WALL_LIKE = frozenset(
    {"wall", "walls", "whiteboard", "blackboard", "board", "bulletin board", "pegboard", "cork board", "corkboard"}
)

# Semantic suitability of supporting surfaces: tier 0 is best (furniture with a top meant for
# objects), tier 1 other furniture and appliances, tier 2 the floor. Anything else cannot support.
_SUPPORT_TIER: dict[str, int] = {}
for _label in (
    "table",
    "desk",
    "counter",
    "countertop",
    "kitchen counter",
    "shelf",
    "shelves",
    "bookshelf",
    "bookcase",
    "nightstand",
    "night stand",
    "dresser",
    "cabinet",
    "kitchen cabinet",
    "kitchen cabinets",
    "coffee table",
    "side table",
    "end table",
    "dining table",
    "tv stand",
    "sideboard",
    "windowsill",
    "shoe rack",
    "rack",
    "cart",
    "file cabinet",
    "drawer",
    "dish drying rack",
    "work bench",
    "workbench",
    "office desk",
    "computer desk",
    "storage shelf",
    "wardrobe",
):
    _SUPPORT_TIER[_label] = 0
for _label in (
    "bed",
    "sofa",
    "couch",
    "chair",
    "office chair",
    "armchair",
    "stool",
    "bench",
    "ottoman",
    "mattress",
    "refrigerator",
    "microwave",
    "oven",
    "stove",
    "washing machine",
    "washer",
    "dryer",
    "printer",
    "computer tower",
    "crate",
    "box",
    "suitcase",
    "piano",
    "radiator",
    "heater",
    "sink",
    "bathtub",
    "toilet",
    "trash can",
    "trash bin",
    "bin",
    "basket",
    "cushion",
    "pillow",
    "blanket",
    "laptop",
    "book",
    "keyboard",
    "tray",
    "cutting board",
    "plate",
):
    _SUPPORT_TIER[_label] = 1
for _label in ("floor", "carpet", "rug", "floor mat"):
    _SUPPORT_TIER[_label] = 2
SUPPORT_TIERS = dict(_SUPPORT_TIER)


def category_of(label: str) -> str | None:
    """The vocabulary category of a source label (exact match after lower-casing), or None."""
    return _CATEGORY.get(label.strip().lower())


def is_target_label(label: str) -> bool:
    return category_of(label) is not None


def is_structural(label: str) -> bool:
    return label.strip().lower() in STRUCTURAL


def is_floor_or_wall(label: str) -> bool:
    return label.strip().lower() in FLOOR_WALL


def support_tier(label: str) -> int | None:
    """0 (table-like) / 1 (other furniture, appliances) / 2 (floor), or None when ``label`` cannot
    be a supporting surface (walls attach, they do not support: see ``WALL_LIKE``)."""
    return SUPPORT_TIERS.get(label.strip().lower())
