import { Writable } from 'node:stream';

/** Collects a gateway's JSON log lines (pass as `startGateway(kind, env, { logStream })`). */
export class LogCapture extends Writable {
  readonly lines: string[] = [];
  override _write(chunk: Buffer, _enc: string, done: () => void): void {
    this.lines.push(...chunk.toString('utf8').split('\n').filter(Boolean));
    done();
  }
  get records(): Record<string, any>[] {
    return this.lines.map((l) => JSON.parse(l));
  }
  get text(): string {
    return this.lines.join('\n');
  }
}
