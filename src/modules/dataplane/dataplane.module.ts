import { CallHandler, ExecutionContext, forwardRef, Injectable, Module, NestInterceptor } from '@nestjs/common';
import { APP_INTERCEPTOR } from '@nestjs/core';
import type { FastifyReply } from 'fastify';
import { Observable } from 'rxjs';
import { AuthModule, StorageModule, TablesModule } from '../../app.module';
import { ThrottlingModule } from '../throttling/throttling.module';
import { PHALANX_VERSION } from './dataplane.constants';
import { DataplaneController } from './dataplane.controller';
import { DataplaneService } from './dataplane.service';
import { EnterpriseController } from './enterprise.controller';
import { LanceEngine } from './lance-engine';

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

/** The compute engine: data operations for the official remote client and the Enterprise routes. */
@Module({
  imports: [forwardRef(() => AuthModule), forwardRef(() => StorageModule), forwardRef(() => TablesModule), ThrottlingModule],
  controllers: [DataplaneController, EnterpriseController],
  providers: [DataplaneService, LanceEngine, { provide: APP_INTERCEPTOR, useClass: PhalanxVersionInterceptor }],
})
export class DataplaneModule {}
