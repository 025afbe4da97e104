// Server-Sent Events over a fetch body (EventSource cannot POST): yields the
// data of each event as it completes. Comments and other fields are skipped;
// a body that ends mid-event is an error (the server went away).

export class StreamBroken extends Error {}

export async function* sseEvents(body: ReadableStream<Uint8Array>): AsyncGenerator<string> {
  const reader = body.getReader();
  const decoder = new TextDecoder();
  let buf = '';
  try {
    for (;;) {
      let chunk: ReadableStreamReadResult<Uint8Array>;
      try {
        chunk = await reader.read();
      } catch (e) {
        throw new StreamBroken(`the connection broke mid-stream (${(e as Error).message})`);
      }
      if (chunk.done) break;
      buf += decoder.decode(chunk.value, { stream: true }).replace(/\r\n?/g, '\n');
      let end: number;
      while ((end = buf.indexOf('\n\n')) >= 0) {
        const block = buf.slice(0, end);
        buf = buf.slice(end + 2);
        const data = block.split('\n').filter(l => l.startsWith('data:'))
          .map(l => l.slice(5).replace(/^ /, '')).join('\n');
        if (data !== '') yield data;
      }
    }
  } finally {
    reader.releaseLock();
  }
  if (buf.trim() !== '') throw new StreamBroken('the stream ended in the middle of an event');
}
