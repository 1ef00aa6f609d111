"""Redis's pqsort.c: the partial quicksort SORT (BY with a LIMIT) and the GEO searches
(COUNT) use when only the first elements of a result are wanted. It is not stable, so
which of two equal elements a LIMIT or COUNT keeps is this algorithm's doing: ported step
by step, on list indexes instead of byte pointers."""

from collections.abc import Callable
from typing import Any


def pqsort(v: list[Any], cmp: Callable[[Any, Any], int], lrange: int, rrange: int) -> None:
    """Sort `v` in place by `cmp` as far as positions lrange..rrange need: NetBSD's
    qsort (Bentley & McIlroy), skipping the partitions that do not overlap them."""

    def swap(i: int, j: int) -> None:
        v[i], v[j] = v[j], v[i]

    def vecswap(i: int, j: int, n: int) -> None:
        for k in range(n):
            v[i + k], v[j + k] = v[j + k], v[i + k]

    def med3(i: int, j: int, k: int) -> int:
        if cmp(v[i], v[j]) < 0:
            return j if cmp(v[j], v[k]) < 0 else (k if cmp(v[i], v[k]) < 0 else i)
        return j if cmp(v[j], v[k]) > 0 else (i if cmp(v[i], v[k]) < 0 else k)

    def insertion(a: int, n: int) -> None:
        for m in range(a + 1, a + n):
            i = m
            while i > a and cmp(v[i - 1], v[i]) > 0:
                swap(i, i - 1)
                i -= 1

    def outside(lo: int, hi: int) -> bool:
        return (lrange < lo and rrange < lo) or (lrange > hi and rrange > hi)

    def run(a: int, n: int) -> None:
        while True:
            if n < 7:
                insertion(a, n)
                return
            swapped = False
            pm = a + n // 2
            if n > 7:
                pl, pn = a, a + n - 1
                if n > 40:
                    d = n // 8
                    pl = med3(pl, pl + d, pl + 2 * d)
                    pm = med3(pm - d, pm, pm + d)
                    pn = med3(pn - 2 * d, pn - d, pn)
                pm = med3(pl, pm, pn)
            swap(a, pm)
            pa = pb = a + 1
            pc = pd = a + n - 1
            while True:
                while pb <= pc:
                    r = cmp(v[pb], v[a])
                    if r > 0:
                        break
                    if r == 0:
                        swapped = True
                        swap(pa, pb)
                        pa += 1
                    pb += 1
                while pb <= pc:
                    r = cmp(v[pc], v[a])
                    if r < 0:
                        break
                    if r == 0:
                        swapped = True
                        swap(pc, pd)
                        pd -= 1
                    pc -= 1
                if pb > pc:
                    break
                swap(pb, pc)
                swapped = True
                pb += 1
                pc -= 1
            if not swapped:
                insertion(a, n)
                return
            pn = a + n
            r = min(pa - a, pb - pa)
            vecswap(a, pb - r, r)
            r = min(pd - pc, pn - pd - 1)
            vecswap(pb, pn - r, r)
            r = pb - pa
            if r > 1 and not outside(a, a + r - 1):
                run(a, r)
            r = pd - pc
            if r <= 1:
                return
            a, n = pn - r, r
            if outside(a, a + r - 1):
                return

    run(0, len(v))
