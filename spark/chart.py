"""The expiry report's chart: counts per time step, one line per series, as a PNG drawn by
matplotlib.

    fig = line_chart_png('expirations.png', {'user': [(ms, count), ...], ...},
                         title='expirations per minute by namespace')

The x axis is time (UTC, from epoch ms), the y axis a count from zero. The returned Figure is
what was saved, so a caller (or a test) can read back the lines, legend and labels.

Why it is drawn this way:
- matplotlib, not pixels by hand: axes, ticks that follow the span (minutes, hours or days,
  with the date shown once), a legend and readable text come with it, where a hand-made
  encoder and bitmap font would have to grow each of them.
- A Figure on its own Agg canvas, never pyplot: pyplot keeps global state (a current
  figure, a backend picked from the environment, figures held until closed) and is not
  thread-safe, while stream mode redraws the chart every trigger from Spark's foreachBatch
  thread. Agg renders without a display; the figure is freed like any object.
- matplotlib is imported inside the function: only the chart needs it, so a run that prints
  the summary to stdout, and the code that never draws, do not pay for the import.
- Missing steps are zero-filled: a minute in which a namespace had no expirations has no
  window row, and a straight line across the gap would show expirations that did not
  happen. Spans of more than MAX_STEPS steps are plotted as given (no filling).
- Saved to a temporary file and renamed over the target: stream mode rewrites the chart
  every trigger, and whoever reads it sees the previous PNG or the new one, never part.
"""

import os

MAX_STEPS = 5000  # beyond this many steps, plot the points as they are
MAX_MARKERS = 120  # points per line up to which each point gets a marker


def _fill(points, step_ms, x_lo, x_hi):
    """Points sorted by x, with a zero at every step in [x_lo, x_hi] that has no point."""
    if not step_ms:
        return sorted(points)
    have = dict(points)
    return [(x, have.get(x, 0)) for x in range(x_lo, x_hi + 1, step_ms)]


def line_chart_png(
    path,
    series,
    title='',
    step_ms=60_000,
    width=960,
    height=480,
    y_label='per minute',
    x_label='time (UTC)',
    dpi=100,
):
    """Draw `series` ({name: [(x_ms, y), ...]}) as lines into the PNG `path`, `width` x
    `height` pixels, zero-filling missing steps of `step_ms`; return the Figure."""
    import numpy as np
    from matplotlib import dates as mdates
    from matplotlib import ticker
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    fig = Figure(figsize=(width / dpi, height / dpi), dpi=dpi, layout='constrained')
    FigureCanvasAgg(fig)
    ax = fig.add_subplot()
    ax.set_title(title)
    ax.set_xlabel(x_label)
    ax.set_ylabel(y_label)
    ax.grid(True, color='0.9')
    ax.set_axisbelow(True)
    ax.yaxis.set_major_locator(ticker.MaxNLocator(integer=True))
    ax.yaxis.set_major_formatter(ticker.StrMethodFormatter('{x:,.0f}'))

    xs = sorted({x for pts in series.values() for x, _ in pts})
    if not xs:
        ax.text(
            0.5,
            0.5,
            'no events',
            transform=ax.transAxes,
            ha='center',
            va='center',
            color='0.4',
            fontsize='large',
        )
        ax.set_xticks([])
        ax.set_yticks([])
    else:
        x_lo, x_hi = xs[0], xs[-1]
        if step_ms and (x_hi - x_lo) // step_ms > MAX_STEPS:
            step_ms = None
        locator = mdates.AutoDateLocator(tz=mdates.UTC)
        ax.xaxis.set_major_locator(locator)
        ax.xaxis.set_major_formatter(mdates.ConciseDateFormatter(locator, tz=mdates.UTC))
        for name in sorted(series):
            pts = _fill(series[name], step_ms, x_lo, x_hi)
            when = np.array([x for x, _ in pts], dtype='datetime64[ms]')
            ax.plot(
                when,
                [y for _, y in pts],
                linewidth=2,
                marker='o' if len(pts) <= MAX_MARKERS else None,
                markersize=4,
                label=name or '(no namespace)',
            )
        if x_hi == x_lo:  # one instant: show a step either side, not a span of days
            pad = np.timedelta64(step_ms or 60_000, 'ms')
            at = np.datetime64(x_lo, 'ms')
            ax.set_xlim(at - pad, at + pad)
        ax.set_ylim(bottom=0)
        ax.legend(
            title='namespace',
            loc='upper left',
            bbox_to_anchor=(1.01, 1),
            borderaxespad=0,
            frameon=False,
        )

    tmp = f'{path}.tmp'
    fig.savefig(tmp, format='png')
    os.replace(tmp, path)
    return fig
