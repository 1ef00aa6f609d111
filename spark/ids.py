"""Stream ids (`<ms>-<seq>`) as comparable (ms, seq) tuples, and the id-range arithmetic the
data source needs: successor/predecessor (so every range can be written as an inclusive XRANGE,
which any server with XRANGE understands, without the `(` exclusive syntax), and planning a
range into partitions of similar size.

Partition planning cannot count entries (Redis has no rank query on streams), so it estimates
the density of the range: it probes K points spread over the range's milliseconds with one
pipelined round trip of `XRANGE <point> <end> COUNT S`. A probe that returns fewer than S entries
before the next point counted its segment exactly; a full probe extrapolates from the number
of milliseconds its S entries covered. Partition boundaries are then placed at equal quantiles
of the estimated cumulative count. Segments that hold a large share and were only
extrapolated are probed again in eighths (up to 4 rounds), so bursts (events bunched in a few
milliseconds of a long range) get boundaries inside them, where a plain split of the
millisecond range would put them all in one partition. Cost: one XRANGE for the first id plus
a few pipelines of small XRANGEs, whatever the size of the range.
"""

SEQ_MAX = 2**64 - 1
ZERO = (0, 0)


def parse_id(value):
    if isinstance(value, bytes):
        value = value.decode()
    ms, _, seq = value.partition('-')
    return int(ms), int(seq or 0)


def fmt_id(ident):
    return f'{ident[0]}-{ident[1]}'


def succ(ident):
    ms, seq = ident
    return (ms, seq + 1) if seq < SEQ_MAX else (ms + 1, 0)


def pred(ident):
    ms, seq = ident
    if seq > 0:
        return ms, seq - 1
    if ms == 0:
        raise ValueError('0-0 has no predecessor')
    return ms - 1, SEQ_MAX


def first_id(client, key, lo, hi):
    """The first id in [lo, hi] or None."""
    got = client.execute_command('XRANGE', key, fmt_id(lo), fmt_id(hi), 'COUNT', 1)
    return parse_id(got[0][0]) if got else None


def last_id(client, key):
    """The stream's last id, or None if the key is missing or empty."""
    got = client.execute_command('XREVRANGE', key, '+', '-', 'COUNT', 1)
    return parse_id(got[0][0]) if got else None


def plan_ranges(client, key, lo, hi, parts, probes_per_part=4, sample=64, refine_rounds=4):
    """Split the inclusive id range [lo, hi] into at most `parts` inclusive ranges that cover
    every entry in it exactly once, sized to hold similar numbers of entries."""
    if lo > hi:
        return []
    first = first_id(client, key, lo, hi)
    if first is None:
        return []
    lo = first
    if parts <= 1:
        return [(lo, hi)]
    ms_lo, ms_hi = lo[0], hi[0]
    if ms_lo == ms_hi:
        # One millisecond: seqs are dense (a writer numbers them 0, 1, 2, ...), split them.
        seq_lo, seq_hi = lo[1], hi[1]
        step = max(1, -(-(seq_hi - seq_lo + 1) // parts))
        out, s = [], seq_lo
        while s <= seq_hi:
            e = min(seq_hi, s + step - 1)
            out.append(((ms_lo, s), (ms_lo, e)))
            s = e + 1
        return out
    span = ms_hi + 1 - ms_lo
    k = min(parts * probes_per_part, span)
    points = [ms_lo + (i * span) // k for i in range(k + 1)]  # points[k] == ms_hi + 1
    segs = _probe(client, key, lo, hi, list(zip(points, points[1:])), sample)
    for _ in range(refine_rounds):
        # A segment whose count is an extrapolation and holds a large share of the range is
        # probed again in eighths, so that bursts get boundaries inside them.
        total = sum(seg[2] for seg in segs)
        keep, split = [], []
        for a, b, w, exact in segs:
            if not exact and b - a > 1 and w > total / (4 * parts):
                n = min(8, b - a)
                split += [(a + (j * (b - a)) // n, a + ((j + 1) * (b - a)) // n) for j in range(n)]
            else:
                keep.append((a, b, w, exact))
        if not split:
            break
        segs = sorted(keep + _probe(client, key, lo, hi, split, sample))
    points = [seg[0] for seg in segs] + [segs[-1][1]]
    weights = [seg[2] for seg in segs]
    k = len(segs)
    total = sum(weights)
    if total <= 0:
        return [(lo, hi)]
    bounds, acc, seg = [], 0.0, 0
    for j in range(1, parts):
        target = total * j / parts
        while seg < k and acc + weights[seg] < target:
            acc += weights[seg]
            seg += 1
        if seg >= k:
            break
        frac = (target - acc) / weights[seg] if weights[seg] else 0.0
        b = points[seg] + int(frac * (points[seg + 1] - points[seg]))
        b = max(b, ms_lo + 1)
        if b <= ms_hi and (not bounds or b > bounds[-1]):
            bounds.append(b)
    out, start = [], lo
    for b in bounds:
        out.append((start, (b - 1, SEQ_MAX)))
        start = (b, 0)
    out.append((start, hi))
    return out


def _probe(client, key, lo, hi, segments, sample):
    """Estimate the entries in each [a, b) ms segment with one pipelined round trip:
    [(a, b, estimated_count, exact)]."""
    pipe = client.pipeline(transaction=False)
    for a, _ in segments:
        start = max(lo, (a, 0))
        pipe.execute_command('XRANGE', key, fmt_id(start), fmt_id(hi), 'COUNT', sample)
    out = []
    for (a, b), reply in zip(segments, pipe.execute()):
        inside = [m for m in (parse_id(entry[0])[0] for entry in reply) if m < b]
        if len(inside) < sample:
            out.append((a, b, float(len(inside)), True))  # counted exactly
        else:
            # `sample` entries spanned `covered` ms from the first one; assume that density
            # for the rest of the segment (the gap before the first entry holds nothing)
            covered = inside[-1] - inside[0] + 1
            out.append((a, b, sample * (b - inside[0]) / covered, False))
    return out
