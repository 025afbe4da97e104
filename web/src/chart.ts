// A live line chart (uPlot) that follows its container's width, for the
// dashboard. Data are whole arrays replaced on each poll; the series may
// change between polls (one line per replica), which rebuilds the plot.
import uPlot from 'uplot';
import 'uplot/dist/uPlot.min.css';
import { h } from './dom';

const COLORS = ['#2563eb', '#dc2626', '#16a34a', '#9333ea', '#ea580c', '#0891b2', '#be185d', '#4d7c0f'];

// A line: its legend label, its colour (an index into COLORS) and whether it
// is dashed (the second figure of a pair drawn in the same colour).
export interface SeriesSpec { label: string; color: number; dashed?: boolean }

export class LiveChart {
  el: HTMLElement;
  private plot: uPlot | null = null;
  private holder: HTMLElement;
  private observer: ResizeObserver;
  private series: SeriesSpec[];

  constructor(public name: string, title: string, private unit: string, labels: string[]) {
    this.series = labels.map((label, i) => ({ label, color: i }));
    this.holder = h('div', { class: 'chart-canvas' });
    this.el = h('figure', { class: 'chart', 'data-testid': `chart-${name}`, 'data-points': '0' },
      h('figcaption', {}, title), this.holder);
    this.observer = new ResizeObserver(() => this.resize());
    this.observer.observe(this.el);
  }

  private width(): number { return Math.max(200, Math.floor(this.el.clientWidth - 16)); }

  private resize() {
    if (this.plot) this.plot.setSize({ width: this.width(), height: 160 });
  }

  // Replaces the data; `series` (one per array of `ys`) replaces the lines
  // when given and different.
  update(x: number[], ys: Array<Array<number | null>>, series?: SeriesSpec[]) {
    if (series && JSON.stringify(series) !== JSON.stringify(this.series)) {
      this.series = series;
      this.plot?.destroy();
      this.plot = null;
    }
    const data = [x, ...ys] as uPlot.AlignedData;
    if (!this.plot) {
      const unit = this.unit;
      this.plot = new uPlot({
        width: this.width(), height: 160,
        legend: { show: true },
        cursor: { show: true, drag: { x: false, y: false } },
        scales: { x: { time: true }, y: { range: (_u, min, max) => [Math.min(0, min ?? 0), Math.max(1, max ?? 1)] } },
        axes: [{}, { size: 56, values: (_u, vals) => vals.map(v => `${+v.toFixed(2)}${unit}`) }],
        series: [{}, ...this.series.map(s => ({ label: s.label, stroke: COLORS[s.color % COLORS.length], width: 1.5,
                                                dash: s.dashed ? [5, 4] : undefined, spanGaps: false }))],
      }, data, this.holder);
    } else {
      this.plot.setData(data);
    }
    // For tests and scripts: the lines, the number of points, each line's
    // largest value and the first line's last value.
    this.el.dataset.points = String(x.length);
    this.el.dataset.series = JSON.stringify(this.series.map(s => s.label));
    this.el.dataset.max = JSON.stringify(ys.map(y => y.reduce<number | null>(
      (m, v) => (v === null || !Number.isFinite(v) ? m : m === null ? v : Math.max(m, v)), null)));
    const last = ys[0]?.[ys[0].length - 1];
    this.el.dataset.last = last === null || last === undefined ? '' : String(last);
  }

  destroy() { this.observer.disconnect(); this.plot?.destroy(); }
}
