/* attngeom/curvature.h */
#ifndef ATTNGEOM_CURVATURE_H
#define ATTNGEOM_CURVATURE_H

#include "core.h"
#include "metrics.h"
#include "model.h"

#endif
