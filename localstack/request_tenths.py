"""The requests' duration over a dev stack's run, by tenth: the median and p99 of each tenth of
the requests the log holds (in the order they ended), so a soak that slows as its table fills
shows it. Standard library only.

Usage: python3 localstack/request_tenths.py localstack/.run/<stack>.log
"""

import json
import sys


def main():
    durations = []
    with open(sys.argv[1]) as log:
        for line in log:
            if not line.startswith("{"):
                continue
            try:
                fields = json.loads(line).get("fields", {})
            except ValueError:
                continue
            if fields.get("message") == "request" and "duration_ms" in fields:
                durations.append(fields["duration_ms"])
    if len(durations) < 10:
        sys.exit(f"{len(durations)} requests in the log: too few to split in tenths")
    tenth = len(durations) // 10
    print(f"{len(durations)} requests; by tenth of the run: median ms, p99 ms")
    medians = []
    for index in range(10):
        part = sorted(durations[index * tenth:(index + 1) * tenth])
        medians.append(part[len(part) // 2])
        print(f"  {index + 1}: {medians[-1]}, {part[int(len(part) * 0.99)]}")
    print(f"last tenth's median / first's: {medians[-1] / max(medians[0], 1):.2f}")


if __name__ == "__main__":
    main()
