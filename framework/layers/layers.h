// Every built-in layer, as keras.layers.
//
//   #include "framework/layers/layers.h"
//   layers::Dense dense(10, {.activation = "softmax"});
//   layers::TransformerEncoder block({.intermediate_dim = 512, .num_heads = 2});
#pragma once

#include "framework/layers/activation.h"
#include "framework/layers/activations.h"
#include "framework/layers/batch_normalization.h"
#include "framework/layers/conv1d.h"
#include "framework/layers/conv2d.h"
#include "framework/layers/dense.h"
#include "framework/layers/dropout.h"
#include "framework/layers/dtype_policy.h"
#include "framework/layers/embedding.h"
#include "framework/layers/flatten.h"
#include "framework/layers/global_pooling.h"
#include "framework/layers/initializers.h"
#include "framework/layers/layer.h"
#include "framework/layers/layer_normalization.h"
#include "framework/layers/multi_head_attention.h"
#include "framework/layers/permute.h"
#include "framework/layers/pooling.h"
#include "framework/layers/reshape.h"
#include "framework/layers/training_step.h"
#include "framework/layers/transformer_encoder.h"
#include "framework/layers/up_sampling2d.h"
#include "framework/layers/weight_ties.h"
#include "framework/layers/zero_padding2d.h"
