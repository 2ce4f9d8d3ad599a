# syntax=docker/dockerfile:1
# The cronjob-controller image: multi-stage, slim, pinned, non-root.
#
# Build:  docker build -t pyctrl/cronjob-controller:dev .
# Pins:   requirements/runtime.lock is `pip freeze` of a clean venv holding only the runtime
#         dependencies of pyctrl-k8s[cronjob] (the framework's plus tzdata); regenerate it
#         when those change.

ARG PYTHON_IMAGE=python:3.11-slim-bookworm

FROM ${PYTHON_IMAGE} AS build
ENV PIP_NO_CACHE_DIR=1 PIP_DISABLE_PIP_VERSION_CHECK=1
WORKDIR /src
COPY requirements/runtime.lock requirements/runtime.lock
RUN python -m venv /opt/venv \
 && /opt/venv/bin/pip install --no-deps -r requirements/runtime.lock
COPY pyproject.toml README.md LICENSE ./
COPY pyctrl ./pyctrl
COPY cronjob_controller ./cronjob_controller
RUN /opt/venv/bin/pip install --no-deps . \
 && /opt/venv/bin/python -m compileall -q /opt/venv

FROM ${PYTHON_IMAGE} AS runtime
LABEL org.opencontainers.image.title="pyctrl cronjob-controller" \
      org.opencontainers.image.description="CronJob operator for batch.pyctrl.io/v1, built on pyctrl" \
      org.opencontainers.image.licenses="Apache-2.0"
ENV PATH=/opt/venv/bin:$PATH \
    PYTHONUNBUFFERED=1 \
    PYTHONDONTWRITEBYTECODE=1
COPY --from=build /opt/venv /opt/venv
# A fixed numeric non-root user, so runAsNonRoot can verify it without a passwd lookup.
RUN groupadd --system --gid 65532 nonroot \
 && useradd --system --uid 65532 --gid 65532 --no-create-home --shell /usr/sbin/nologin nonroot
USER 65532:65532
EXPOSE 8443 8081 9443
ENTRYPOINT ["python", "-m", "cronjob_controller"]
CMD ["--leader-elect", "--log-format=json"]
