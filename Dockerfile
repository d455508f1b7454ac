# Dovecote's app image: web (granian), Celery worker and beat, and the Spark report and archive jobs
# (the `reports` process, beat's hourly runs, the console's Refresh) all run from it (docker-compose.yml).

# Front-end packages (htmx) from the npm registry, per package-lock.json; nothing of them is committed.
FROM node:20-slim AS assets
WORKDIR /assets
COPY package.json package-lock.json ./
RUN npm ci --no-audit --no-fund

# Bookworm: the Debian release whose packages carry Java 17, which the Spark jobs run on.
FROM python:3.13-slim-bookworm

ENV PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    PIP_NO_CACHE_DIR=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1

RUN groupadd --system dovecote \
    && useradd --system --gid dovecote --home-dir /app --no-create-home --shell /usr/sbin/nologin dovecote

WORKDIR /app

# The Spark jobs' JVM and the PostgreSQL JDBC driver (/usr/share/java/postgresql.jar, DOVECOTE_SPARK_JARS's
# default), from Debian's packages; procps: Spark's launch scripts call `ps`. The man-page folder must
# exist for the JRE's post-install script on a slim image.
RUN mkdir -p /usr/share/man/man1 \
    && apt-get update \
    && apt-get install --yes --no-install-recommends openjdk-17-jre-headless libpostgresql-jdbc-java procps \
    && rm -rf /var/lib/apt/lists/*

# Dependencies first, so that a code change does not reinstall them.
COPY requirements.txt .
RUN pip install -r requirements.txt

COPY . .
COPY --from=assets /assets/node_modules ./node_modules

# Static files (with htmx from node_modules) are collected at build time under hashed names, gzipped,
# for WhiteNoise to serve; var/ must be writable. (collectstatic reads the settings, which want keys:
# throwaway ones, used for nothing and kept nowhere.)
RUN DOVECOTE_HTTPS=false DJANGO_SECRET_KEY=$(python -c 'import secrets; print(secrets.token_urlsafe(50))') \
    DOVECOTE_SECRETS_KEY=$(python -c 'import base64, os; print(base64.urlsafe_b64encode(os.urandom(32)).decode())') \
    python manage.py collectstatic --no-input --verbosity 0 \
    && mkdir -p var/metrics var/archive var/spark \
    && chown -R dovecote:dovecote var

USER dovecote
EXPOSE 8000
ENV HOST=0.0.0.0 PORT=8000
CMD ["bin/web"]
