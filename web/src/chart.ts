// A live line chart (uPlot) that follows its container's width, for the
// dashboard. Data are whole arrays replaced on each poll.
import uPlot from 'uplot';
import 'uplot/dist/uPlot.min.css';
import { h } from './dom';

const COLORS = ['#2563eb', '#dc2626', '#16a34a', '#9333ea'];

export class LiveChart {
  el: HTMLElement;
  private plot: uPlot | null = null;
  private holder: HTMLElement;
  private observer: ResizeObserver;

  constructor(public name: string, title: string, private unit: string, private series: string[]) {
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

  update(x: number[], ys: Array<Array<number | null>>) {
    const data = [x, ...ys] as uPlot.AlignedData;
    if (!this.plot) {
      const unit = this.unit;
      this.plot = new uPlot({
        width: this.width(), height: 160,
        legend: { show: true },
        cursor: { show: true, drag: { x: false, y: false } },
        scales: { x: { time: true }, y: { range: (_u, min, max) => [Math.min(0, min ?? 0), Math.max(1, max ?? 1)] } },
        axes: [{}, { size: 56, values: (_u, vals) => vals.map(v => `${+v.toFixed(2)}${unit}`) }],
        series: [{}, ...this.series.map((label, i) => ({ label, stroke: COLORS[i % COLORS.length], width: 1.5,
                                                         spanGaps: false }))],
      }, data, this.holder);
    } else {
      this.plot.setData(data);
    }
    this.el.dataset.points = String(x.length);
    const last = ys[0]?.[ys[0].length - 1];
    this.el.dataset.last = last === null || last === undefined ? '' : String(last);
  }

  destroy() { this.observer.disconnect(); this.plot?.destroy(); }
}
