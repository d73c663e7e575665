// The CPU backend's op factories, called only by nn/ops/dispatch.cpp.
#pragma once

#include "nn/ops/backend_ops.h"

RT_DECLARE_BACKEND_OPS(cpu)
