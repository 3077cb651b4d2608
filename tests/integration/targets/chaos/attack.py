"""A stray peer on the lab network: one attack against ADDRESS:PORT, run inside a lab namespace, for SECONDS at most.

  attack.py KIND ADDRESS PORT SECONDS

KIND: malformed (one line of 100,000 '['), huge (100 MB, no newline), trickle (a byte every 4 s), flood (2,000
connections held open), token (a well-formed first line with a wrong proof), silent (connects, never speaks).
Every socket is closed and the process ends by itself within SECONDS (bounded in count and time, loopback or the
test's own namespaces only). Prints one line: what it did, and how the peer answered (closed by the peer, or not).
"""
import resource
import socket
import sys
import time


def connect(addr, port, timeout=3.0):
    s = socket.create_connection((addr, port), timeout=timeout)
    s.settimeout(timeout)
    return s


def closed_by_peer(s, wait):
    """Whether the peer closed (or reset) the connection within ``wait`` seconds."""
    s.settimeout(wait)
    try:
        while True:
            data = s.recv(65536)
            if not data:
                return True
    except socket.timeout:
        return False
    except OSError:
        return True


def send_all(s, data, deadline):
    view = memoryview(data)
    sent = 0
    while sent < len(view) and time.monotonic() < deadline:
        try:
            sent += s.send(view[sent:sent + (1 << 20)])
        except socket.timeout:
            continue
        except OSError:
            break
    return sent


def main():
    kind, addr, port, seconds = sys.argv[1], sys.argv[2], int(sys.argv[3]), float(sys.argv[4])
    deadline = time.monotonic() + seconds
    if kind == "malformed":
        s = connect(addr, port)
        send_all(s, b"[" * 100000 + b"\n", deadline)
        print("malformed: 100,000 '[' sent; closed by the peer: %s" % closed_by_peer(s, 5.0))
        s.close()
    elif kind == "huge":
        s = connect(addr, port)
        sent = send_all(s, b"x" * (100 * 1000 * 1000), deadline)
        print("huge: %d of 100,000,000 bytes taken before the peer stopped reading or closed; closed by the peer: %s"
              % (sent, closed_by_peer(s, 5.0)))
        s.close()
    elif kind == "trickle":
        s = connect(addr, port)
        n, cut = 0, False
        while time.monotonic() < deadline - 4.5:
            try:
                s.send(b"A")
                n += 1
            except OSError:
                cut = True
                break
            if closed_by_peer(s, 4.0):
                cut = True
                break
        print("trickle: %d bytes, a byte every 4 s; cut off by the peer: %s" % (n, cut))
        s.close()
    elif kind == "flood":
        hard = resource.getrlimit(resource.RLIMIT_NOFILE)[1]
        resource.setrlimit(resource.RLIMIT_NOFILE, (min(hard, 4096), hard))
        socks, refused = [], 0
        for _attempt in range(2000):
            if time.monotonic() > deadline - 3:
                break
            try:
                socks.append(connect(addr, port, timeout=1.0))
            except OSError:
                refused += 1
        time.sleep(max(0.0, min(3.0, deadline - time.monotonic())))
        dropped = sum(1 for s in socks if closed_by_peer(s, 0.01))
        for s in socks:
            s.close()
        print("flood: %d connections opened (%d refused), %d closed by the peer while held" % (
            len(socks), refused, dropped))
    elif kind == "token":
        s = connect(addr, port)
        # the rendezvous' first line (AFRV2 <run> <proof>) and the tcp engine's hello (AFL1 + 16 bytes) alike
        send_all(s, b"AFRV2 " + b"0" * 16 + b" " + b"f" * 32 + b"\n", deadline)
        send_all(s, b"AFL1" + b"\x00" * 16 + b"\x00" * 10, deadline)
        print("token: a wrong proof sent; closed by the peer: %s" % closed_by_peer(s, 5.0))
        s.close()
    elif kind == "silent":
        s = connect(addr, port)
        print("silent: connected, said nothing; closed by the peer: %s" % closed_by_peer(
            s, max(0.1, min(10.0, deadline - time.monotonic()))))
        s.close()
    else:
        sys.exit("unknown attack %r" % kind)


if __name__ == "__main__":
    main()
