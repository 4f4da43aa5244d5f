import { CallHandler, ExecutionContext, Injectable, NestInterceptor } from '@nestjs/common';
import type { FastifyReply } from 'fastify';
import { Observable } from 'rxjs';
import { PHALANX_VERSION } from './dataplane.constants';

/** Advertises the remote-client feature level this gateway implements on every REST-contract (`/v1/`) answer. */
@Injectable()
export class PhalanxVersionInterceptor implements NestInterceptor {
  intercept(ctx: ExecutionContext, next: CallHandler): Observable<unknown> {
    if (ctx.getType() === 'http') {
      const http = ctx.switchToHttp();
      const url = http.getRequest<{ url: string }>().url;
      if (url.includes('/v1/') && !url.startsWith('/admin/')) http.getResponse<FastifyReply>().header('phalanx-version', PHALANX_VERSION);
    }
    return next.handle();
  }
}
