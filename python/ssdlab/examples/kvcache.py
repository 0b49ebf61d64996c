"""A log-structured key–value flash cache in the CacheLib manner, on four drives (issue 42,
point 4; docs/kvcache.md).

The cache has two regions, as CacheLib's flash engine (Navy) has:

- the small-object cache (SOC, Navy's BigHash): 4 KiB buckets; an object's key hashes to a
  bucket, and inserting it reads the bucket and writes it back whole (random 4 KiB writes);
- the large-object cache (LOC, Navy's BlockCache): objects are packed into a segment buffer
  in memory; a full buffer is written whole to the next segment of a circular log (sequential
  writes), overwriting the oldest segment (FIFO eviction).

Inserts are drawn from a Zipf popularity over the keys; each key has a fixed size, small keys go
to the SOC. Nothing the cache does depends on timing, so it is worked out first as a request
list (``ssdlab.run_requests``) and the drive runs it in order at a queue depth. Four drives:

1. ``conventional``: one write stream, in service (every logical block written once before
   the cache starts, as drives are measured and used);
2. ``placement``: the same drive with Flexible Data Placement and one placement handle per
   region (``fdp.handles = 2``: the SOC's writes carry handle 1, the LOC's handle 0, in the
   request's stream field, which an FDP drive reads as its placement identifier);
3. ``fresh``: the conventional drive never written before the cache;
4. ``zoned``: a zoned drive (NVMe ZNS). LOC segments are whole zones, reset before each reuse
   (FIFO, no copy); SOC buckets are written at the write pointer of an open SOC zone, and when
   free SOC zones run short the host collects garbage: it reads the live buckets of the SOC
   zone with the fewest, writes them forward and resets the zone. Its copies are the host
   write amplification.

The same cache (bucket count, segment count and size) runs on every drive: it is
``utilisation`` × the conventional drive's logical capacity. The zoned drive has no device
over-provisioning (its logical capacity is its whole NAND); the cache takes ``utilisation`` of
its zones, so the NAND the conventional drive keeps as over-provisioning becomes spare SOC
zones for the host's GC.
"""

from __future__ import annotations

import argparse
import json
import math
import sys
from collections import deque
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from typing import Any

import numpy as np

from .. import _core
from ..api import Config
from ..request_list import OP_CODES, run_requests

KIB = 1024
MIB = 1024 * KIB

# -- the cache's parameters, with their sources ---------------------------------------------

#: Zipf exponent of key popularity: YCSB's default (``ZipfianGenerator.ZIPFIAN_CONSTANT``).
ZIPF_ALPHA = 0.99
#: Distinct keys (assumed: several times the objects the cache holds at 95 %).
KEY_COUNT = 1_000_000
#: Share of keys that are small objects (assumed: key–value caches are dominated by small
#: objects; CacheLib's SOC exists for objects of "100s of bytes").
SMALL_KEY_SHARE = 0.9
#: Largest object the SOC takes: cachebench's ``navySmallItemMaxSize`` default.
SMALL_MAX_BYTES = 2048
#: Smallest object (assumed, "100s of bytes" per CacheLib's Small Object Cache guide).
SMALL_MIN_BYTES = 100
#: Largest object (Navy's BlockCacheProto: "1Kb - 512Kb typically"); large sizes are
#: log-uniform between SMALL_MAX_BYTES and this (the shape assumed).
LARGE_MAX_BYTES = 512 * KIB
#: SOC bucket: Navy's BigHash bucket size default (4096); read and written whole.
BUCKET_BYTES = 4096
#: SOC share of the cache: 4 %, CacheLib's FDP guide's KV-cache runs ("SOC size set to 4%").
SOC_SHARE = 0.04
#: LOC segment (Navy BlockCache region) size: the default 16 MiB.
SEGMENT_BYTES = 16 * MIB
#: Largest write the cache issues: Navy's ``deviceMaxWriteSize`` default (1 MiB); a segment is
#: written as 16 such writes.
WRITE_BYTES = 1 * MIB
#: Requests in flight (Navy's guide suggests 32 or 64 concurrent writes).
IODEPTH = 32
#: Free SOC zones below which the zoned cache collects garbage (assumed: one to write into
#: while a collection copies, one spare).
GC_FREE_ZONES = 2
#: Cache writes before measuring, and measured, in logical capacities of the conventional drive
#: (assumed; enough that the drive is full and its GC in steady state: docs/kvcache.md).
WARMUP_DRIVE_WRITES = 4.0
MEASURED_DRIVE_WRITES = 2.0

#: Placement handles (write streams) of the two regions.
LOC_HANDLE = 0
SOC_HANDLE = 1

# -- the drives -----------------------------------------------------------------------------

#: small-tlc's and zns-tlc's NAND with 256 blocks per plane instead of 128: 2 GiB raw (16
#: planes × 256 blocks × 32 pages × 16 KiB), so that a run of three drive writes takes seconds.
MEDIA = ("nand.blocks_per_plane=256",)
#: A drive in service: every logical block written once (a sequential fill) before the cache
#: starts, so the blocks the cache does not use still hold data the drive must keep. This is
#: how drives are measured (SNIA SSS PTS: purge, then precondition) and how a deployed drive
#: is; and it is the only state in which CacheLib's FDP guide's conventional figure at 50 %
#: utilisation (device WAF 1.22) can arise: a drive whose other half was never written keeps
#: it all as spare room, and its GC copies next to nothing (the `fresh` drive below).
IN_SERVICE = ('precondition.fill="sequential"', "precondition.random_overwrite=0.0")
#: No preconditioning: the cache's own warm-up fills the drive, the rest stays unwritten.
FRESH = ('precondition.fill="none"', "precondition.random_overwrite=0.0")


@dataclass(frozen=True)
class Drive:
    name: str
    preset: str
    overrides: tuple[str, ...]
    #: The requests carry the regions' placement handles.
    placement: bool = False
    zoned: bool = False

    def config(self, extra: Sequence[str] = ()) -> Config:
        return Config.load(self.preset, overrides=[*self.overrides, *extra])


#: The drives. The placement drive is FDP with two handles (docs/fdp.md).
DRIVES: dict[str, Drive] = {
    "conventional": Drive("conventional", "small-tlc", MEDIA + IN_SERVICE),
    "placement": Drive(
        "placement",
        "small-tlc",
        MEDIA + IN_SERVICE + ("fdp.handles=2",),
        placement=True,
    ),
    # The conventional drive never written before the cache: the contrast that shows where
    # the conventional drive's amplification at low utilisation comes from.
    "fresh": Drive("fresh", "small-tlc", MEDIA + FRESH),
    # Zones of one segment each (two blocks on each of the 16 planes).
    "zoned": Drive(
        "zoned", "zns-tlc", MEDIA + (f'zns.zone_size="{SEGMENT_BYTES // MIB}MiB"',), zoned=True
    ),
}

UTILISATIONS = (0.5, 0.8, 0.95)


# -- the workload ---------------------------------------------------------------------------


def _mix64(x: np.ndarray) -> np.ndarray:
    """splitmix64's finaliser on uint64s (a fixed, well-mixed hash of the key)."""
    x = x.astype(np.uint64)
    x = (x ^ (x >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
    x = (x ^ (x >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
    return x ^ (x >> np.uint64(31))


def _unit(h: np.ndarray) -> np.ndarray:
    """A hash's top 53 bits as a float in [0, 1)."""
    return (h >> np.uint64(11)).astype(np.float64) / float(1 << 53)


def key_sizes(keys: np.ndarray) -> np.ndarray:
    """Each key's object size in bytes, fixed by the key: small (SOC) for SMALL_KEY_SHARE of
    keys, uniform from SMALL_MIN_BYTES to SMALL_MAX_BYTES, else log-uniform above
    SMALL_MAX_BYTES up to LARGE_MAX_BYTES."""
    kind = _unit(_mix64(keys ^ np.uint64(0x5A5A_0001)))
    pick = _unit(_mix64(keys ^ np.uint64(0x5A5A_0002)))
    small = SMALL_MIN_BYTES + np.floor(pick * (SMALL_MAX_BYTES - SMALL_MIN_BYTES + 1))
    low = math.log(SMALL_MAX_BYTES + 1)
    large = np.floor(np.exp(low + pick * (math.log(LARGE_MAX_BYTES) - low)))
    return np.where(kind < SMALL_KEY_SHARE, small, large).astype(np.int64)


def key_buckets(keys: np.ndarray, buckets: int) -> np.ndarray:
    """Each key's SOC bucket (a uniform hash, as BigHash's)."""
    return (_mix64(keys ^ np.uint64(0x5A5A_0003)) % np.uint64(buckets)).astype(np.int64)


class ZipfKeys:
    """Keys drawn with probability ∝ rank^-alpha over ``count`` keys (inverse CDF), from a
    seeded numpy generator: the same seed gives the same keys."""

    def __init__(self, count: int, alpha: float, seed: int) -> None:
        weights = np.arange(1, count + 1, dtype=np.float64) ** -alpha
        self.cdf = np.cumsum(weights)
        self.cdf /= self.cdf[-1]
        self.rng = np.random.Generator(np.random.PCG64(seed))

    def draw(self, n: int) -> np.ndarray:
        ranks = np.searchsorted(self.cdf, self.rng.random(n), side="right")
        # Rank r is key r: the hashes above scatter ranks over buckets and sizes.
        return np.minimum(ranks, len(self.cdf) - 1).astype(np.uint64)


# -- the cache's layout ---------------------------------------------------------------------


@dataclass(frozen=True)
class Layout:
    """Where the cache's regions are, in bytes of the drive."""

    cache_bytes: int
    buckets: int
    segments: int
    segment_bytes: int
    #: Conventional and placement drives: the SOC's first byte (0) and the LOC's.
    loc_base: int
    #: Zoned drive: zone size, and the zones of each region (LOC zone k holds segment k).
    zone_bytes: int = 0
    loc_zones: int = 0
    soc_zones: int = 0


def layout(drive: Drive, utilisation: float, logical_bytes: int, zoned_bytes: int) -> Layout:
    """The cache at ``utilisation`` of the conventional drive's ``logical_bytes`` (the same on
    every drive), placed on ``drive`` (``zoned_bytes``: the zoned drive's capacity)."""
    if not 0.0 < utilisation <= 1.0:
        raise ValueError(f"utilisation: got {utilisation}, expected a share above 0 up to 1")
    cache = int(utilisation * logical_bytes)
    buckets = int(SOC_SHARE * cache) // BUCKET_BYTES
    loc_base = -(-buckets * BUCKET_BYTES // SEGMENT_BYTES) * SEGMENT_BYTES
    segments = (cache - loc_base) // SEGMENT_BYTES
    if buckets < 1 or segments < 2:
        raise ValueError(
            f"utilisation {utilisation}: a cache of {cache} bytes holds {buckets} buckets and"
            f" {segments} segments; expected at least 1 and 2 (a larger drive or utilisation)"
        )
    if not drive.zoned:
        return Layout(cache, buckets, segments, SEGMENT_BYTES, loc_base)
    zone = SEGMENT_BYTES
    zones = zoned_bytes // zone
    cache_zones = int(utilisation * zones)
    soc_zones = cache_zones - segments
    need = -(-buckets * BUCKET_BYTES // zone) + GC_FREE_ZONES
    if soc_zones < need:
        raise ValueError(
            f"utilisation {utilisation}: the zoned drive gives the SOC {soc_zones} zones,"
            f" expected at least {need} (its buckets and {GC_FREE_ZONES} free for GC)"
        )
    return Layout(cache, buckets, segments, SEGMENT_BYTES, 0, zone, segments, soc_zones)


# -- the cache: its requests ----------------------------------------------------------------


class Requests:
    """The request list being built, and the cache's write counters."""

    def __init__(self, placement: bool) -> None:
        self.ops: list[int] = []
        self.offsets: list[int] = []
        self.lens: list[int] = []
        self.streams: list[int] = []
        self.placement = placement
        self.cache_write_bytes = 0  # what the cache's logic writes (buckets, segments)
        self.soc_write_bytes = 0  # the buckets' part of it
        self.gc_write_bytes = 0  # what the host's zone GC copies on top

    def add(self, op: str, offset: int, length: int, handle: int = 0) -> None:
        self.ops.append(OP_CODES[op])
        self.offsets.append(offset)
        self.lens.append(length)
        self.streams.append(handle if self.placement else 0)


class Loc:
    """The large-object region: a segment buffer and a circular log of segments."""

    def __init__(self, lay: Layout, out: Requests, zoned: bool) -> None:
        self.lay, self.out, self.zoned = lay, out, zoned
        self.fill = 0
        self.next = 0
        self.written = [False] * lay.segments

    def insert(self, size: int) -> None:
        if self.fill + size > SEGMENT_BYTES:
            self.flush()
        self.fill += size

    def flush(self) -> None:
        k = self.next
        if self.zoned:
            start = k * self.lay.zone_bytes
            if self.written[k]:
                # FIFO eviction of the oldest segment: its zone is reset, nothing is copied.
                self.out.add("zone_reset", start, 0)
        else:
            start = self.lay.loc_base + k * SEGMENT_BYTES
        for off in range(0, SEGMENT_BYTES, WRITE_BYTES):
            self.out.add("write", start + off, WRITE_BYTES, LOC_HANDLE)
        self.written[k] = True
        self.out.cache_write_bytes += SEGMENT_BYTES
        self.next = (k + 1) % self.lay.segments
        self.fill = 0


class Soc:
    """The small-object region on a drive with a map (conventional or placement): bucket b at
    byte b × 4 KiB, read and written back in place."""

    def __init__(self, out: Requests) -> None:
        self.out = out

    def insert(self, bucket: int) -> None:
        off = bucket * BUCKET_BYTES
        self.out.add("read", off, BUCKET_BYTES, SOC_HANDLE)
        self.out.add("write", off, BUCKET_BYTES, SOC_HANDLE)
        self.out.cache_write_bytes += BUCKET_BYTES
        self.out.soc_write_bytes += BUCKET_BYTES


class ZonedSoc:
    """The small-object region on a zoned drive: each bucket write goes to the write pointer of
    the open SOC zone; the host collects the SOC zone with the fewest live buckets when fewer
    than GC_FREE_ZONES zones are free."""

    def __init__(self, lay: Layout, out: Requests) -> None:
        self.out = out
        self.zone_bytes = lay.zone_bytes
        self.per_zone = lay.zone_bytes // BUCKET_BYTES
        first = lay.loc_zones
        self.zones = list(range(first, first + lay.soc_zones))
        self.location = [-1] * lay.buckets  # each bucket's byte on the drive (-1: none yet)
        self.live = {z: 0 for z in self.zones}
        self.entries: dict[int, list[tuple[int, int]]] = {z: [] for z in self.zones}
        self.free = deque(self.zones[1:])
        self.open = self.zones[0]
        self.wp = 0  # bytes written in the open zone
        self.full: set[int] = set()
        self.collecting = False
        self.resets = 0
        self.copies = 0

    def insert(self, bucket: int) -> None:
        old = self.location[bucket]
        if old >= 0:
            self.out.add("read", old, BUCKET_BYTES)
        self._write(bucket)
        self.out.cache_write_bytes += BUCKET_BYTES
        self.out.soc_write_bytes += BUCKET_BYTES
        while len(self.free) < GC_FREE_ZONES and not self.collecting:
            self._collect()

    def _write(self, bucket: int) -> None:
        if self.wp == self.zone_bytes:
            self.full.add(self.open)
            self.open = self.free.popleft()
            self.wp = 0
        off = self.open * self.zone_bytes + self.wp
        self.wp += BUCKET_BYTES
        self.out.add("write", off, BUCKET_BYTES)
        old = self.location[bucket]
        if old >= 0:
            self.live[old // self.zone_bytes] -= 1
        self.location[bucket] = off
        self.live[self.open] += 1
        self.entries[self.open].append((bucket, off))

    def _collect(self) -> None:
        self.collecting = True
        victim = min(self.full, key=lambda z: (self.live[z], z))
        self.full.remove(victim)
        for bucket, off in self.entries[victim]:
            if self.location[bucket] == off:
                self.out.add("read", off, BUCKET_BYTES)
                self._write(bucket)
                self.out.gc_write_bytes += BUCKET_BYTES
                self.copies += 1
        self.out.add("zone_reset", victim * self.zone_bytes, 0)
        self.resets += 1
        self.entries[victim] = []
        self.live[victim] = 0
        self.free.append(victim)
        self.collecting = False


@dataclass
class Plan:
    """A run's request list and what the cache did."""

    drive: str
    utilisation: float
    seed: int
    layout: Layout
    ops: np.ndarray
    offsets: np.ndarray
    lens: np.ndarray
    streams: np.ndarray
    warmup_requests: int
    measured_inserts: int
    measured_cache_write_bytes: int
    measured_gc_write_bytes: int
    measured_soc_write_bytes: int
    #: SOC zones the host collected (reset) in the measured part.
    soc_resets: int = 0

    @property
    def host_waf(self) -> float:
        """(cache writes + host GC writes) ÷ cache writes over the measured part."""
        return (
            self.measured_cache_write_bytes + self.measured_gc_write_bytes
        ) / self.measured_cache_write_bytes


def plan(
    drive: Drive,
    utilisation: float,
    seed: int = 1,
    *,
    logical_bytes: int,
    zoned_bytes: int,
    warmup_drive_writes: float = WARMUP_DRIVE_WRITES,
    measured_drive_writes: float = MEASURED_DRIVE_WRITES,
    key_count: int = KEY_COUNT,
) -> Plan:
    """The cache's requests on ``drive`` at ``utilisation``: inserts until the cache has
    written ``warmup_drive_writes`` logical capacities (the warm-up), then
    ``measured_drive_writes`` more."""
    lay = layout(drive, utilisation, logical_bytes, zoned_bytes)
    out = Requests(drive.placement)
    loc = Loc(lay, out, drive.zoned)
    soc: Soc | ZonedSoc = ZonedSoc(lay, out) if drive.zoned else Soc(out)
    keys = ZipfKeys(key_count, ZIPF_ALPHA, seed)
    warmup_target = int(warmup_drive_writes * logical_bytes)
    measured_target = int(measured_drive_writes * logical_bytes)
    warmup_requests = -1
    base_cache = base_gc = base_soc = base_resets = 0
    inserts = 0
    while True:
        drawn = keys.draw(1 << 15)
        sizes = key_sizes(drawn).tolist()
        buckets = key_buckets(drawn, lay.buckets).tolist()
        for size, bucket in zip(sizes, buckets, strict=True):
            if warmup_requests < 0 and out.cache_write_bytes >= warmup_target:
                warmup_requests = len(out.ops)
                base_cache, base_gc = out.cache_write_bytes, out.gc_write_bytes
                base_soc = out.soc_write_bytes
                base_resets = soc.resets if isinstance(soc, ZonedSoc) else 0
                inserts = 0
            if warmup_requests >= 0 and out.cache_write_bytes - base_cache >= measured_target:
                return Plan(
                    drive=drive.name,
                    utilisation=utilisation,
                    seed=seed,
                    layout=lay,
                    ops=np.asarray(out.ops, dtype=np.uint8),
                    offsets=np.asarray(out.offsets, dtype=np.uint64),
                    lens=np.asarray(out.lens, dtype=np.uint64),
                    streams=np.asarray(out.streams, dtype=np.uint8),
                    warmup_requests=warmup_requests,
                    measured_inserts=inserts,
                    measured_cache_write_bytes=out.cache_write_bytes - base_cache,
                    measured_gc_write_bytes=out.gc_write_bytes - base_gc,
                    measured_soc_write_bytes=out.soc_write_bytes - base_soc,
                    soc_resets=(soc.resets if isinstance(soc, ZonedSoc) else 0) - base_resets,
                )
            if size <= SMALL_MAX_BYTES:
                soc.insert(bucket)
            else:
                loc.insert(size)
            inserts += 1


# -- running a point ------------------------------------------------------------------------


def capacities(extra: Sequence[str] = ()) -> tuple[int, int]:
    """The conventional drive's logical capacity and the zoned drive's, in bytes."""
    conventional = _core.job_capacity(DRIVES["conventional"].config(extra).to_json())
    zoned = _core.job_capacity(DRIVES["zoned"].config(extra).to_json())
    return conventional, zoned


def run_point(
    drive_name: str,
    utilisation: float,
    seed: int = 1,
    *,
    extra: Sequence[str] = (),
    warmup_drive_writes: float = WARMUP_DRIVE_WRITES,
    measured_drive_writes: float = MEASURED_DRIVE_WRITES,
    key_count: int = KEY_COUNT,
) -> dict[str, Any]:
    """Plan the cache on one drive at one utilisation and run it: the point's figures."""
    if drive_name not in DRIVES:
        raise ValueError(f"drive: got {drive_name!r}, expected one of {', '.join(DRIVES)}")
    drive = DRIVES[drive_name]
    logical, zoned = capacities(extra)
    p = plan(
        drive,
        utilisation,
        seed,
        logical_bytes=logical,
        zoned_bytes=zoned,
        warmup_drive_writes=warmup_drive_writes,
        measured_drive_writes=measured_drive_writes,
        key_count=key_count,
    )
    result = run_requests(
        drive.config(extra),
        p.ops,
        p.offsets,
        p.lens,
        p.streams,
        seed=seed,
        iodepth=IODEPTH,
        warmup=p.warmup_requests,
    ).to_dict()
    measured = result["requests"]["measured"]
    seconds = result["sim"]["measured_time_s"]
    point: dict[str, Any] = {
        "drive": drive.name,
        "utilisation": utilisation,
        "seed": seed,
        "device_waf": measured["write_amplification"],
        "host_waf": p.host_waf,
        "inserts_per_s": p.measured_inserts / seconds if seconds > 0 else 0.0,
        "write_mb_s": result["ops"].get("write", {}).get("bandwidth_mb_s", 0.0),
        "soc_write_share": p.measured_soc_write_bytes / p.measured_cache_write_bytes,
        "measured_inserts": p.measured_inserts,
        "measured_time_s": seconds,
        "requests": int(p.ops.shape[0]),
        "warmup_requests": p.warmup_requests,
        "layout": asdict(p.layout),
    }
    if "streams" in measured:
        point["handle_waf"] = [s["write_amplification"] for s in measured["streams"]]
    zones = result["device"].get("zones")
    if zones is not None:
        point["zone_resets"] = zones["resets"]
        point["soc_gc_resets"] = p.soc_resets
        point["zone_errors"] = zones["errors"]
    return point


def run_all(
    drives: Sequence[str] = tuple(DRIVES),
    utilisations: Sequence[float] = UTILISATIONS,
    seed: int = 1,
    **options: Any,
) -> list[dict[str, Any]]:
    """Every (drive, utilisation) point, drives first."""
    return [run_point(d, u, seed, **options) for d in drives for u in utilisations]


def table(points: Sequence[dict[str, Any]]) -> str:
    """The points as a Markdown table."""
    lines = [
        "| drive | utilisation | device WAF | host WAF | inserts/s | writes MB/s |",
        "|---|---|---|---|---|---|",
    ]
    for p in points:
        lines.append(
            f"| {p['drive']} | {p['utilisation'] * 100:.0f} % | {p['device_waf']:.3f} |"
            f" {p['host_waf']:.3f} | {p['inserts_per_s']:,.0f} | {p['write_mb_s']:,.1f} |"
        )
    return "\n".join(lines) + "\n"


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m ssdlab.examples.kvcache",
        description="A CacheLib-like key-value flash cache on a conventional, a placement and a"
        " zoned drive (docs/kvcache.md).",
    )
    parser.add_argument("--drive", action="append", choices=list(DRIVES), help="default: all")
    parser.add_argument(
        "--utilisation", action="append", type=float, help="share of the drive (0.5, 0.8, 0.95)"
    )
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--json", metavar="FILE", help="also write the points as JSON")
    args = parser.parse_args(argv)
    points = run_all(args.drive or tuple(DRIVES), args.utilisation or UTILISATIONS, args.seed)
    sys.stdout.write(table(points))
    if args.json:
        with open(args.json, "w", encoding="utf-8") as f:
            json.dump(points, f, indent=1)
            f.write("\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
