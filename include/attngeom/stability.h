/* attngeom/stability.h */
#ifndef ATTNGEOM_STABILITY_H
#define ATTNGEOM_STABILITY_H

#include "core.h"
#include "metrics.h"
#include "model.h"

#endif
