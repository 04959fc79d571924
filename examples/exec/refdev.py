#!/usr/bin/env python3
"""A device program for pcieperf's exec backend, in Python 3 with the standard library only.

    pcieperf bench run --backend 'exec:python3 examples/exec/refdev.py'

It drives NO real device: it EMULATES one in host memory, as the Rust reference program
(pcieperf-refdev) does. Every "DMA" is a copy between an 8 KB device buffer and the host buffer
pcieperf shares with it, timed with time.perf_counter_ns(); the numbers describe this CPU and the
Python interpreter, not PCIe. Use it as the skeleton of a program for a real device: keep the
protocol handling (main, hello, reply) and replace Device.run with calls into your driver.

The protocol (docs/backends.md): one JSON object per line. pcieperf sends "hello", then one
"test" per test, then "bye"; the program answers the hello with its own and every test with
"latency", "bandwidth" or "error" carrying the test's id. Logs go to stderr, never stdout.
"""

import json
import mmap
import random
import sys
import time

PROTOCOL_VERSION = 1
DEVICE_BYTES = 8192
BUFFER_BYTES = 64 << 20
LINE = 64


def send(message):
    sys.stdout.write(json.dumps(message) + "\n")
    sys.stdout.flush()


def log(text):
    print("refdev.py: " + text, file=sys.stderr, flush=True)


class Device:
    """The emulated device: its own 8 KB buffer and the host buffer it copies to and from."""

    def __init__(self):
        self.local = bytearray(DEVICE_BYTES)
        self.host = None

    def attach(self, offer):
        """Maps the buffer pcieperf offers (a path to open), or allocates one."""
        if offer is None:
            self.host = bytearray(BUFFER_BYTES)
            return
        with open(offer["path"], "r+b") as f:
            self.host = mmap.mmap(f.fileno(), offer["bytes"])

    def units(self, p):
        """Start addresses of the window's units that do not cross a 4 KB page."""
        unit = -(-(p["size"] + p["host_offset"]) // 64) * 64
        reach = p["size"] + p["host_offset"]
        starts = [u * unit for u in range(p["window"] // unit)]
        return [s for s in starts if s // 4096 == (s + reach - 1) // 4096] or [0]

    def device_cache_step(self, p, rng):
        """dwarm: 64 B writes over the window, 2 passes; dthrash: 64 B writes to random lines
        of the whole buffer, 2 passes. (cold and hwarm need nothing from the device.)"""
        line = b"\x5a" * LINE
        if p["cache"] == "dwarm":
            for _ in range(2):
                for at in range(0, p["window"], LINE):
                    self.host[at:at + LINE] = line
        elif p["cache"] == "dthrash":
            lines = len(self.host) // LINE
            for _ in range(2 * lines):
                at = rng.randrange(lines) * LINE
                self.host[at:at + LINE] = line

    def run(self, test):
        p = test["params"]
        rng = random.Random(test["seed"])
        self.device_cache_step(p, rng)
        units = self.units(p)
        size, count, kind = p["size"], p["count"], p["kind"]
        dev = slice(p["device_offset"], p["device_offset"] + size)
        host, local, clock = self.host, self.local, time.perf_counter_ns

        def address(i):
            u = i % len(units) if p["pattern"] == "seq" else rng.randrange(len(units))
            return units[u] + p["host_offset"]

        start = clock()
        if kind.startswith("LAT"):
            write_read = kind in ("LAT_WRRD", "LAT_CMD_WRRD")
            samples = []
            for i in range(count):
                at = address(i)
                t0 = clock()
                if write_read:
                    host[at:at + size] = local[dev]
                local[dev] = host[at:at + size]
                samples.append(clock() - t0)
            return {"type": "latency", "id": test["id"], "samples": samples, "total_cycles": clock() - start}
        for i in range(count):
            at = address(i)
            if kind == "BW_WR" or (kind == "BW_RDWR" and i % 2 == 1):
                host[at:at + size] = local[dev]
            else:
                local[dev] = host[at:at + size]
        elapsed = max(clock() - start, 1)
        # BW_RDWR counts one direction: half the DMAs, as pcie-bench does.
        per_direction = count // 2 if kind == "BW_RDWR" else count
        return {
            "type": "bandwidth",
            "id": test["id"],
            "bytes": per_direction * size,
            "transactions": per_direction,
            "time_cycles": elapsed,
        }


def hello():
    return {
        "type": "hello",
        "protocol": PROTOCOL_VERSION,
        "device": {
            "name": "refdev.py",
            "emulated": True,
            "description": "EMULATED device in Python, no PCIe: DMAs are copies between an 8 KB device "
            "buffer and the host buffer, timed with perf_counter_ns.",
        },
        "max_transfer": 4096,
        "cycle_ps": 1000,
        "host_cache_steps": False,
    }


def main():
    device = Device()
    for line in sys.stdin:
        try:
            request = json.loads(line)
        except ValueError as e:
            send({"type": "error", "message": "cannot read request %r: %s" % (line[:120], e)})
            return 1
        kind = request.get("type")
        if kind == "hello":
            if request.get("protocol") != PROTOCOL_VERSION:
                log("pcieperf speaks protocol %s; this program speaks %d" % (request.get("protocol"), PROTOCOL_VERSION))
            device.attach(request.get("buffer"))
            send(hello())
        elif kind == "test":
            try:
                send(device.run(request))
            except Exception as e:  # report, stay in step for the next test
                send({"type": "error", "id": request.get("id"), "message": "%s: %s" % (type(e).__name__, e)})
        elif kind == "bye":
            return 0
        else:
            log("ignoring a request of unknown type %r" % kind)
    return 0


if __name__ == "__main__":
    sys.exit(main())
