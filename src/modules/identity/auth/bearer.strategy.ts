import { Injectable } from '@nestjs/common';
import { PassportStrategy } from '@nestjs/passport';
import { Strategy } from 'passport-http-bearer';
import { JwtVerifier } from './jwt-verifier.service';

/** `Authorization: Bearer <token>` through passport-http-bearer; the token is verified by JwtVerifier. */
@Injectable()
export class BearerStrategy extends PassportStrategy(Strategy, 'bearer') {
  constructor(private readonly verifier: JwtVerifier) {
    super();
  }

  validate(token: string) {
    return this.verifier.verify(token);
  }
}
