# syntax=docker/dockerfile:1
# sepconv1d in a container. Every step runs the repository's own scripts.
#
#   docker build -t sepconv1d .                      # the runtime image (default target)
#   docker run --rm --gpus all -v "$PWD/results:/opt/sepconv1d/benchmarks/results" sepconv1d
#                                                    # the benchmark (a small CPU demo without a GPU)
#   docker build --target test -t sepconv1d:test .
#   docker run --rm --gpus all sepconv1d:test        # the test suite against the installed wheel
#
# Build args: CUDA_VERSION (the toolkit of the build stage), TORCH_INDEX (PyTorch's wheel index for that
# CUDA major), TORCH_SPEC, TORCH_CUDA_ARCH_LIST (default: the release list), MAX_JOBS.
ARG CUDA_VERSION=13.0.2
ARG TORCH_INDEX=https://download.pytorch.org/whl/cu130
ARG TORCH_SPEC=torch==2.14.1

# ---- build: the wheel, built, installed and audited in a venv by scripts/setup_env.sh --------------
FROM nvidia/cuda:${CUDA_VERSION}-devel-ubuntu24.04 AS build
# hadolint ignore=DL3008
RUN apt-get update \
    && apt-get install -y --no-install-recommends python3 python3-dev python3-venv binutils \
    && rm -rf /var/lib/apt/lists/*
WORKDIR /src
COPY . .
ARG TORCH_INDEX
ARG TORCH_SPEC
ARG TORCH_CUDA_ARCH_LIST="8.0;9.0;10.0;12.0+PTX"
ARG MAX_JOBS=4
ENV SEPCONV1D_VENV=/opt/venv \
    PIP_NO_CACHE_DIR=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1
RUN PIP_EXTRA_INDEX_URL="$TORCH_INDEX" SEPCONV1D_TORCH_SPEC="$TORCH_SPEC" \
      TORCH_CUDA_ARCH_LIST="$TORCH_CUDA_ARCH_LIST" MAX_JOBS="$MAX_JOBS" \
      bash scripts/setup_env.sh \
    && PYTHON=/opt/venv/bin/python bash scripts/audit_wheel.sh --installed dist/sepconv1d-*.whl

# ---- runtime: torch and the wheel only (torch's wheels bring the CUDA libraries; the NVIDIA container
# toolkit brings the driver) ------------------------------------------------------------------------
FROM python:3.12-slim-bookworm AS runtime
ENV NVIDIA_VISIBLE_DEVICES=all \
    NVIDIA_DRIVER_CAPABILITIES=compute,utility \
    PIP_NO_CACHE_DIR=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1 \
    SEPCONV1D_VENV=/opt/venv
WORKDIR /opt/sepconv1d
COPY scripts/ scripts/
COPY --from=build /src/dist/ dist/
ARG TORCH_INDEX
ARG TORCH_SPEC
SHELL ["/bin/bash", "-o", "pipefail", "-c"]
RUN wheel=$(ls dist/sepconv1d-*.whl) \
    && PIP_EXTRA_INDEX_URL="$TORCH_INDEX" SEPCONV1D_TORCH_SPEC="$TORCH_SPEC" SEPCONV1D_DEPS=runtime \
       SEPCONV1D_WHEEL="$wheel" bash scripts/setup_env.sh
ENV PATH=/opt/venv/bin:$PATH
CMD ["python", "-m", "sepconv1d.bench"]

# ---- test: the test suite against the installed wheel ----------------------------------------------
FROM runtime AS test
COPY pyproject.toml ./
COPY tests/ tests/
RUN python -m pip install -r scripts/requirements-test.txt
CMD ["bash", "-c", "bash scripts/install_and_test_wheel.sh dist/sepconv1d-*.whl"]

# ---- the default target ---------------------------------------------------------------------------
FROM runtime
