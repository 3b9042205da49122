// All public ops (kestrel::ops) in one include.
#pragma once

#include "framework/ops/conv.h"
#include "framework/ops/data_dependent.h"
#include "framework/ops/elementwise.h"
#include "framework/ops/fused_elementwise.h"
#include "framework/ops/matmul.h"
#include "framework/ops/nn.h"
#include "framework/ops/reduce.h"
#include "framework/ops/shape_ops.h"
