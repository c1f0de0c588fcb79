"""The requests' duration over a dev stack's run, by tenth: the median and p99 of each tenth of
the requests the log holds (in the order they ended), so a soak that slows as its table fills
shows it. Standard library only.

Usage: python3 localstack/request_tenths.py localstack/.run/<stack>.log [--by-route]

`--by-route` also prints each busy route's median by tenth of the run (the run's tenths, by
time): the overall median also moves with the mix of requests (an empty shop's first minute
has no orders to step, no reviews to write), a route's own median only with its cost.
"""

import json
import sys


def main():
    durations = []
    routes = []
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
                routes.append(fields.get("route", "?"))
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
    if "--by-route" in sys.argv[2:]:
        by_route(durations, routes)


def by_route(durations, routes, busiest=12):
    """Each of the busiest routes' median in each tenth of the requests (in order)."""
    tenth = len(durations) // 10
    counts = {}
    for route in routes:
        counts[route] = counts.get(route, 0) + 1
    print("by route (the busiest): median ms in each tenth of the run; last / first")
    for route in sorted(counts, key=lambda r: -counts[r])[:busiest]:
        medians = []
        for index in range(10):
            part = sorted(
                d for d, r in zip(durations[index * tenth:(index + 1) * tenth],
                                  routes[index * tenth:(index + 1) * tenth]) if r == route
            )
            medians.append(part[len(part) // 2] if part else None)
        shown = ", ".join("-" if m is None else str(m) for m in medians)
        present = [m for m in medians if m is not None]
        ratio = present[-1] / max(present[0], 1) if present else 0
        print(f"  {route} ({counts[route]}): {shown}; {ratio:.2f}")


if __name__ == "__main__":
    main()
