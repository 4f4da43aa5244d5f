import { ChildProcess, fork } from 'node:child_process';
import * as path from 'node:path';
import { freePort } from './redis';
import { program } from './root';

/**
 * A gateway in its own OS process (the built bench/gateway-child entry), watched: when a request takes the process
 * down (an out-of-memory abort, a native crash), the test learns how it died and can start it again on the same
 * catalog and storage, instead of losing its own process with it — which is what an in-process gateway would do.
 */
export interface Death {
  code: number | null;
  signal: NodeJS.Signals | null;
  /** The last lines the process wrote to stderr/stdout before it died. */
  tail: string;
}

export class SupervisedGateway {
  private child?: ChildProcess;
  private port = 0;
  private output: string[] = [];
  /** Every line the processes wrote (bounded), to find the logged cause of a 500 by its request id. */
  private readonly lines: string[] = [];
  /** Every unplanned exit, oldest first. */
  readonly deaths: Death[] = [];
  private stopping = false;

  constructor(
    private readonly env: Record<string, string>,
    /** Node options for the child, e.g. a heap bound. */
    private readonly execArgv: string[] = [],
  ) {}

  get url(): string {
    return `http://127.0.0.1:${this.port}`;
  }

  get host(): string {
    return '127.0.0.1';
  }

  get portNumber(): number {
    return this.port;
  }

  get alive(): boolean {
    return !!this.child && this.child.exitCode === null && this.child.signalCode === null;
  }

  /** Starts the process and resolves when it listens. */
  async start(): Promise<void> {
    this.port = await freePort();
    this.output = [];
    const child = fork(program(path.resolve(__dirname, '../../bench/gateway-child.js')), [], {
      env: { ...process.env, LOG_LEVEL: 'error', ...this.env, PORT: String(this.port) },
      execArgv: this.execArgv,
      stdio: ['ignore', 'pipe', 'pipe', 'ipc'],
    });
    this.child = child;
    // Whole lines only: a chunk may end in the middle of one (the engine writes its panics in pieces).
    const keeper = () => {
      let partial = '';
      return (b: Buffer) => {
        const parts = (partial + b.toString('utf8')).split('\n');
        partial = parts.pop() ?? '';
        for (const line of parts) {
          if (!line.trim()) continue;
          this.output.push(line.slice(0, 2000));
          if (this.lines.length < 50_000) this.lines.push(line.slice(0, 50_000));
        }
        if (this.output.length > 60) this.output.splice(0, this.output.length - 60);
        if (process.env.TEST_LOGS) process.stderr.write(b);
      };
    };
    child.stdout?.on('data', keeper());
    child.stderr?.on('data', keeper());
    child.on('exit', (code, signal) => {
      if (!this.stopping)
        this.deaths.push({
          code,
          signal,
          tail: this.output
            .filter((l) => !/^\s+(\d+:|at) /.test(l))
            .slice(-12)
            .join('\n'),
        });
    });
    await new Promise<void>((resolve, reject) => {
      child.once('message', () => resolve());
      child.once('exit', (code) => reject(new Error(`gateway process exited with ${code} while starting:\n${this.output.join('\n')}`)));
    });
  }

  /**
   * The first line of the error the gateway logged for request `requestId` (the `instance` of its 500 answer): the
   * error line logged just before the request's own log line.
   */
  loggedError(requestId: string): string | undefined {
    const at = this.lines.findIndex((l) => l.includes(`"reqId":"${requestId}"`));
    for (let i = at - 1; at > 0 && i >= Math.max(0, at - 40); i--) {
      if (!this.lines[i].includes('"context":"Errors"')) continue;
      let msg: string;
      try {
        msg = String(JSON.parse(this.lines[i]).msg);
      } catch {
        msg = this.lines[i];
      }
      // A Postgres error inside a Prisma one: its SQLSTATE and message say more than the first line.
      const pg = /Code: `(\w+)`\. Message: `([^`]*)`/.exec(msg);
      if (pg) return `${msg.split(':')[0]}: Postgres ${pg[1]} ${pg[2]}`;
      return msg.split('\n').find((l) => l.trim()) ?? msg;
    }
    return undefined;
  }

  /** Kills a process that no longer answers (recorded as a death), then starts a new one. */
  async restart(): Promise<void> {
    if (this.alive) {
      const exited = new Promise((r) => this.child!.once('exit', r));
      this.child!.kill('SIGKILL');
      await exited;
    }
    await this.start();
  }

  async stop(): Promise<void> {
    this.stopping = true;
    if (!this.alive) return;
    const exited = new Promise((r) => this.child!.once('exit', r));
    this.child!.kill('SIGTERM');
    const timer = setTimeout(() => this.child?.kill('SIGKILL'), 10_000);
    await exited;
    clearTimeout(timer);
  }
}
