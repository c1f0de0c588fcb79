"""Prints how many cases the fuzz ran per route and role, and per status, at the end."""

import collections

# (METHOD path) -> role -> status -> count; filled by test_contract.py.
COUNTS = collections.defaultdict(lambda: collections.defaultdict(collections.Counter))


def pytest_terminal_summary(terminalreporter):
    if not COUNTS:
        return
    write = terminalreporter.write_line
    total = 0
    write("")
    write("cases per route (by role: count, statuses):")
    for route in sorted(COUNTS):
        by_role = COUNTS[route]
        cases = sum(sum(c.values()) for c in by_role.values())
        total += cases
        parts = []
        for role in sorted(by_role):
            statuses = " ".join(f"{s}x{n}" for s, n in sorted(by_role[role].items()))
            parts.append(f"{role} {sum(by_role[role].values())} [{statuses}]")
        write(f"  {route:45} {cases:5}  " + "; ".join(parts))
    statuses = collections.Counter()
    for by_role in COUNTS.values():
        for counter in by_role.values():
            statuses.update(counter)
    write(f"total: {total} cases on {len(COUNTS)} routes; statuses: "
          + " ".join(f"{s}x{n}" for s, n in sorted(statuses.items())))
