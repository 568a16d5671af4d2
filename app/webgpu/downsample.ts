// Downsampling a [rows, cols] matrix for display: block means over a grid of at most
// maxRows × maxCols cells (every source element lands in exactly one cell, so nothing is
// skipped, and the displayed value is the average of the block it covers).

export interface Grid {
  rows: number;
  cols: number;
  data: Float32Array;
  /** Source rows / cols per cell (the last cell may hold fewer). */
  rowBlock: number;
  colBlock: number;
}

export function blockMean(src: Float32Array, rows: number, cols: number, maxRows: number, maxCols: number): Grid {
  const rowBlock = Math.ceil(rows / Math.min(rows, maxRows));
  const colBlock = Math.ceil(cols / Math.min(cols, maxCols));
  const gr = Math.ceil(rows / rowBlock);
  const gc = Math.ceil(cols / colBlock);
  const sum = new Float64Array(gr * gc);
  const cnt = new Uint32Array(gr * gc);
  for (let r = 0; r < rows; r++) {
    const cr = Math.floor(r / rowBlock) * gc;
    for (let c = 0; c < cols; c++) {
      const cell = cr + Math.floor(c / colBlock);
      sum[cell] += src[r * cols + c];
      cnt[cell]++;
    }
  }
  const data = new Float32Array(gr * gc);
  for (let i = 0; i < data.length; i++) data[i] = sum[i] / cnt[i];
  return { rows: gr, cols: gc, data, rowBlock, colBlock };
}
