#!/usr/bin/env python3
"""Hostile HTTP clients for the attack suite: many connections that trickle
their headers, sit idle, or trickle a body, each reopened as soon as the
server closes it, for a bounded time. Loopback addresses only.

usage: hostile_clients.py HOST:PORT CONNECTIONS SECONDS [TOKEN]
Prints one line of counts at the end.
"""
import asyncio
import resource
import sys
import time

HOST, PORT = sys.argv[1].rsplit(":", 1)
CONNECTIONS = int(sys.argv[2])
SECONDS = float(sys.argv[3])
TOKEN = sys.argv[4] if len(sys.argv) > 4 else ""
# Spread over several loopback source addresses, as clients on many hosts.
SOURCES = ["127.0.0.%d" % i for i in range(2, 10)]
assert HOST.startswith("127."), "loopback only"

stats = {"opened": 0, "closed_by_server": 0, "refused": 0}


async def hold(kind, source, end):
    while time.monotonic() < end:
        try:
            reader, writer = await asyncio.open_connection(HOST, int(PORT), local_addr=(source, 0))
        except OSError:
            stats["refused"] += 1
            await asyncio.sleep(0.5)
            continue
        stats["opened"] += 1
        try:
            if kind == "slow-headers":
                writer.write(b"GET /v1/jobs HTTP/1.1\r\nHost: x\r\n")
                trickle = b"X-Slow: " + b"a" * 10000
            elif kind == "slow-body":
                auth = b"Authorization: Bearer " + TOKEN.encode() + b"\r\n" if TOKEN else b""
                writer.write(b"POST /v1/jobs HTTP/1.1\r\nHost: x\r\n" + auth +
                             b"Content-Type: application/json\r\nContent-Length: 100000\r\n\r\n{")
                trickle = b" " * 100000
            else:  # idle: connected, says nothing
                trickle = b""
            await writer.drain()
            i = 0
            while time.monotonic() < end:
                if trickle:
                    writer.write(trickle[i:i + 1])
                    i += 1
                    await writer.drain()
                try:
                    data = await asyncio.wait_for(reader.read(4096), timeout=1.0)
                    if not data:
                        stats["closed_by_server"] += 1
                        break
                except asyncio.TimeoutError:
                    pass
        except (ConnectionError, OSError):
            stats["closed_by_server"] += 1
        finally:
            writer.close()


async def main():
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (min(hard, max(soft, CONNECTIONS + 256)), hard))
    end = time.monotonic() + SECONDS
    kinds = ["slow-headers", "idle", "slow-body"]
    await asyncio.gather(*(hold(kinds[i % 3], SOURCES[i % len(SOURCES)], end) for i in range(CONNECTIONS)))
    print("hostile clients on %s: %d connections opened, %d closed by the server, %d refused" %
          (sys.argv[1], stats["opened"], stats["closed_by_server"], stats["refused"]))


asyncio.run(main())
