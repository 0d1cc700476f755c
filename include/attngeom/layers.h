/* attngeom/layers.h */
#ifndef ATTNGEOM_LAYERS_H
#define ATTNGEOM_LAYERS_H

#include "core.h"
#include "metrics.h"
#include "model.h"

#endif
