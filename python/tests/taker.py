"""One process taking turns on a key (test_processes.py): TURNS times,
acquire, hold HOLD seconds, release; each turn a JSON line on stdout, in
microseconds of the machine's monotonic clock (shared by processes):
the wait's start (a bound on when its granting attempt was sent), when the
grant came back, and the stretch it believed it held the key."""

import json
import sys
import time

import s3_lease


def now_us() -> int:
    return time.monotonic_ns() // 1000


def main(who: int, key: str, turns: int, hold: float) -> None:
    client = s3_lease.Client.from_env()
    for _ in range(turns):
        sent = now_us()
        lease = client.acquire(key, ttl=10.0, wait=60.0)
        acked = now_us()
        assert lease.held
        time.sleep(hold)
        # The term ends before the release is sent (from then on another
        # may be granted the key), at the last look that it was held.
        assert lease.held, "lost while holding"
        end = now_us()
        lease.release()
        print(json.dumps({"who": who, "token": lease.token, "sent": sent, "acked": acked,
                          "start": acked, "end": end}), flush=True)
    client.close()


if __name__ == "__main__":
    main(int(sys.argv[1]), sys.argv[2], int(sys.argv[3]), float(sys.argv[4]))
