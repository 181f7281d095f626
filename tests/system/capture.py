"""A packet capture of the loopback interface, in Python (no tcpdump): what an eavesdropper on the casino's
network path would read.

:class:`LoopbackCapture` opens a Linux ``AF_PACKET`` raw socket on ``lo`` (needs root or ``CAP_NET_RAW``; CI
runs as root), keeps the TCP payload of every IPv4 segment to or from the given ports (each segment once: the
kernel's outgoing copy on ``lo`` is skipped), in a background thread, between ``start`` and ``stop``.
:meth:`LoopbackCapture.found` looks for a byte string in each segment and in each direction's bytes joined in
capture order (a string split over two segments is still found).
"""

from __future__ import annotations

import socket
import struct
import threading
from collections import defaultdict

ETH_P_ALL = 0x0003
PACKET_OUTGOING = 4


class CaptureUnavailable(RuntimeError):
    """No raw socket on ``lo`` (not Linux, or neither root nor ``CAP_NET_RAW``)."""


class LoopbackCapture:
    """TCP payloads on ``lo`` to or from ``ports`` (see the module)."""

    def __init__(self, ports: set[int]):
        self.ports = set(ports)
        self.segments: list[tuple[int, int, bytes]] = []  # (source port, destination port, payload)
        self.frames = 0
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        try:
            self._sock = socket.socket(socket.AF_PACKET, socket.SOCK_RAW, socket.ntohs(ETH_P_ALL))
            self._sock.bind(("lo", 0))
        except (AttributeError, OSError) as e:
            raise CaptureUnavailable(f"cannot capture on lo ({type(e).__name__}: {e}): needs Linux and root "
                                     "(or CAP_NET_RAW)") from None
        # the socket gets every frame on lo (the filter on ports is ours, in Python): with four test workers and
        # a broker on lo, the default 208 KiB buffer overflowed and frames were dropped (the contrast's write
        # went unseen, CI of 2026-12-04); 32 MiB where the caller may force it (root), else what the limit allows
        for opt in (getattr(socket, "SO_RCVBUFFORCE", None), socket.SO_RCVBUF):
            if opt is None:
                continue
            try:
                self._sock.setsockopt(socket.SOL_SOCKET, opt, 32 * 1024 * 1024)
                break
            except OSError:
                continue
        self._sock.settimeout(0.1)

    def __enter__(self) -> "LoopbackCapture":
        self._thread = threading.Thread(target=self._run, name="loopback-capture", daemon=True)
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(5)
        self._sock.close()

    def _run(self) -> None:
        while not self._stop.is_set():
            try:
                frame, addr = self._sock.recvfrom(65535)
            except TimeoutError:
                continue
            except OSError:
                return
            if addr[2] == PACKET_OUTGOING:
                continue
            self.frames += 1
            self._keep(frame)

    def _keep(self, frame: bytes) -> None:
        if len(frame) < 14 + 20 or frame[12:14] != b"\x08\x00":  # IPv4 behind the (dummy) Ethernet header
            return
        ip = frame[14:]
        ihl = (ip[0] & 0x0F) * 4
        if ip[9] != 6:  # TCP
            return
        total = struct.unpack("!H", ip[2:4])[0]
        tcp = ip[ihl:total]
        if len(tcp) < 20:
            return
        sport, dport = struct.unpack("!HH", tcp[:4])
        if sport not in self.ports and dport not in self.ports:
            return
        payload = tcp[(tcp[12] >> 4) * 4:]
        if payload:
            self.segments.append((sport, dport, bytes(payload)))

    @property
    def payload_bytes(self) -> int:
        """TCP payload bytes kept."""
        return sum(len(p) for _, _, p in self.segments)

    def found(self, needle: bytes) -> bool:
        """Whether ``needle`` appears in a kept segment or in a direction's bytes joined in capture order."""
        flows: dict[tuple[int, int], list[bytes]] = defaultdict(list)
        for sport, dport, payload in self.segments:
            if needle in payload:
                return True
            flows[(sport, dport)].append(payload)
        return any(needle in b"".join(parts) for parts in flows.values())
