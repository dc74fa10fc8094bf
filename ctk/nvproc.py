"""Parsers for the files the NVIDIA driver writes under /proc: pure functions of the text.

One parser per format, shared by `cdi generate` (ctk.host.driver), `doctor` (ctk.host.facts)
and `system` (ctk.system): `/proc/devices`, `/proc/driver/nvidia-caps/mig-minors` and
`/proc/driver/nvidia/gpus/<bus id>/information` (also `/proc/driver/nvidia/params`). The driver
prints them with fixed formats (`%3d %s`, `%s %d`, `Key: \t value`); fields are split on any
run of spaces or tabs and trailing whitespace is ignored, so that what other driver versions
(or a hand-made fixture) write parses the same. No I/O here.
"""

from __future__ import annotations

from dataclasses import dataclass

CHARACTER_DEVICES = "Character devices:"
MALFORMED_SHOWN = 40  # characters of a malformed line quoted in messages


def _number(text: str) -> int | None:
    """A plain decimal number (ASCII digits only: int() accepts more), else None."""
    return int(text) if text.isascii() and text.isdigit() else None


def parse_proc_devices(text: str) -> dict[str, int]:
    """name -> major of the `Character devices:` section of /proc/devices (first one wins)."""
    majors: dict[str, int] = {}
    in_chars = False
    for line in text.splitlines():
        stripped = line.strip()
        if stripped.endswith(":"):  # a section header: "Character devices:", "Block devices:"
            in_chars = stripped == CHARACTER_DEVICES
            continue
        fields = stripped.split(None, 1)
        if not in_chars or len(fields) != 2:
            continue
        major = _number(fields[0])
        if major is not None:
            majors.setdefault(fields[1].strip(), major)
    return majors


@dataclass(frozen=True, slots=True)
class MigMinors:
    """/proc/driver/nvidia-caps/mig-minors: `<capability> <minor>` per line."""

    minors: tuple[tuple[str, int], ...] = ()  # ("gpu0/gi1/access", 12), in file order
    malformed: tuple[str, ...] = ()  # "line 3: 'gpu0/gi1/access x'": lines that are not that

    def as_dict(self) -> dict[str, int]:
        """capability -> minor (a capability listed twice: the last line wins)."""
        return dict(self.minors)


def parse_mig_minors(text: str) -> MigMinors:
    """The capability minors of a mig-minors file, and the lines that are not one."""
    minors = []
    malformed = []
    for number, line in enumerate(text.splitlines(), 1):
        fields = line.split()
        minor = _number(fields[1]) if len(fields) == 2 else None
        if minor is not None:
            minors.append((fields[0], minor))
        elif fields:
            shown = line.strip()
            if len(shown) > MALFORMED_SHOWN:
                shown = shown[:MALFORMED_SHOWN] + "..."
            malformed.append(f"line {number}: '{shown}'")
    return MigMinors(tuple(minors), tuple(malformed))


def parse_key_values(text: str) -> dict[str, str]:
    """`Key: value` lines (split on the first colon), values stripped of blanks and quotes.

    The format of a GPU's `information` file and of /proc/driver/nvidia/params.
    """
    found = {}
    for line in text.splitlines():
        key, sep, value = line.partition(":")
        if sep:
            found[key.strip()] = value.strip().strip('"')
    return found


@dataclass(frozen=True, slots=True)
class GpuInformation:
    """/proc/driver/nvidia/gpus/<bus id>/information: what the driver says about one GPU."""

    model: str = ""
    uuid: str = ""
    bus_location: str = ""  # "0000:07:00.0"
    device_minor: int | None = None  # N of /dev/nvidiaN; None: missing or not a number
    excluded: bool = False


def parse_gpu_information(text: str) -> GpuInformation:
    """The fields of a GPU's information file that ctk uses."""
    info = parse_key_values(text)
    return GpuInformation(
        model=info.get("Model", ""),
        uuid=info.get("GPU UUID", ""),
        bus_location=info.get("Bus Location", ""),
        device_minor=_number(info.get("Device Minor", "")),
        excluded=info.get("GPU Excluded", "No") == "Yes",
    )
