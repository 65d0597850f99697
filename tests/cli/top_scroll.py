# `shoal top` on a terminal of 9 rows, 80 columns: the GPU rows that do not
# fit are scrolled with keys. Prints each frame's "GPUs A-B of N" line, one
# per key sent (none, j, j, k, g), then quits with q. Bounded: 60 s in all (sanitizer builds on a loaded machine are slow).
#   python3 top_scroll.py SHOAL
import fcntl, os, pty, re, select, struct, sys, termios, time

pid, fd = pty.fork()
if pid == 0:
    os.execv(sys.argv[1], [sys.argv[1], "top", "--interval", "30"])
fcntl.ioctl(fd, termios.TIOCSWINSZ, struct.pack("HHHH", 9, 80, 0, 0))
deadline = time.time() + 60
seen = b""

def frame_line(count):
    # Waits for the count-th "GPUs A-B of N" line and returns it.
    global seen
    while time.time() < deadline:
        found = re.findall(rb"GPUs \d+-\d+ of \d+", seen)
        if len(found) >= count:
            return found[count - 1].decode()
        ready, _, _ = select.select([fd], [], [], 0.2)
        if ready:
            try:
                seen += os.read(fd, 65536)
            except OSError:
                break
    return "(none)"

lines = [frame_line(1)]
for n, key in enumerate([b"j", b"j", b"\x1b[A", b"g"], start=2):
    os.write(fd, key)
    lines.append(frame_line(n))
os.write(fd, b"q")
for _ in range(100):
    done, status = os.waitpid(pid, os.WNOHANG)
    if done:
        break
    time.sleep(0.05)
else:
    os.kill(pid, 9)
    os.waitpid(pid, 0)
    print("shoal top did not stop on q")
print("\n".join(lines))
