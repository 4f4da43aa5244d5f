import { ChildProcess, fork } from 'node:child_process';
import * as path from 'node:path';
import { freePort } from './redis';

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
    const child = fork(path.resolve(__dirname, '../../bench/gateway-child.js'), [], {
      env: { ...process.env, LOG_LEVEL: 'error', ...this.env, PORT: String(this.port) },
      execArgv: this.execArgv,
      stdio: ['ignore', 'pipe', 'pipe', 'ipc'],
    });
    this.child = child;
    const keep = (b: Buffer) => {
      for (const line of b.toString('utf8').split('\n')) if (line.trim()) this.output.push(line.slice(0, 2000));
      if (this.output.length > 60) this.output.splice(0, this.output.length - 60);
      if (process.env.TEST_LOGS) process.stderr.write(b);
    };
    child.stdout?.on('data', keep);
    child.stderr?.on('data', keep);
    child.on('exit', (code, signal) => {
      if (!this.stopping) this.deaths.push({ code, signal, tail: this.output.slice(-25).join('\n') });
    });
    await new Promise<void>((resolve, reject) => {
      child.once('message', () => resolve());
      child.once('exit', (code) => reject(new Error(`gateway process exited with ${code} while starting:\n${this.output.join('\n')}`)));
    });
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
