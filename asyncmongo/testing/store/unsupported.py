"""What mongod knows and the store does not implement, refused by name.

mongod answers an operator or stage it does not know with "unrecognized"/"unknown" errors;
the store answers one mongod knows but the store does not implement with the same code and a
message naming it as unsupported here, so a test never mistakes a simulator gap for a typo
(nor gets a silently different result).
"""

from __future__ import annotations

from asyncmongo.testing.store.errors import StoreError

STORE = "asyncmongo.testing"

STAGES = frozenset({
    "$bucket", "$bucketAuto", "$changeStreamSplitLargeEvent", "$currentOp", "$densify",
    "$fill", "$geoNear", "$indexStats", "$listClusterCatalog", "$listSampledQueries",
    "$listSessions", "$planCacheStats", "$querySettings", "$rankFusion", "$redact",
    "$sample", "$search", "$searchMeta", "$setWindowFields", "$shardedDataDistribution",
    "$vectorSearch", "$scoreFusion", "$listMqlEntities",
})

EXPRESSIONS = frozenset("""$acos $acosh $allElementsTrue $anyElementTrue $asin $asinh $atan
$atan2 $atanh $binarySize $bitAnd $bitNot $bitOr $bitXor $bsonSize $ceil $convert $cos $cosh
$dateAdd $dateDiff $dateFromParts $dateFromString $dateSubtract $dateToParts $dateToString
$dateTrunc $dayOfMonth $dayOfWeek $dayOfYear $degreesToRadians $exp $firstN $floor $function
$hour $indexOfBytes $indexOfCP $isNumber $isoDayOfWeek $isoWeek $isoWeekYear $lastN $ln $log
$log10 $ltrim $maxN $median $millisecond $minN $minute $month $percentile $pow
$radiansToDegrees $regexFind $regexFindAll $regexMatch $replaceAll $replaceOne $round $rtrim
$second $sin $sinh $sortArray $sqrt $stdDevPop $stdDevSamp $strLenBytes $strcasecmp $substr
$substrBytes $substrCP $tan $tanh $toBool $toDate $toDecimal $toDouble $toHashedIndexKey $toInt
$toLong $trim $trunc $tsIncrement $tsSecond $week $year $zip $accumulator $covariancePop
$covarianceSamp $denseRank $derivative $documentNumber $expMovingAvg $integral $linearFill
$locf $rank $shift $top $topN $bottom $bottomN""".split())

ACCUMULATORS = frozenset({
    "$accumulator", "$bottom", "$bottomN", "$firstN", "$lastN", "$maxN", "$median",
    "$mergeObjects", "$minN", "$percentile", "$stdDevPop", "$stdDevSamp", "$top", "$topN",
})

QUERY_OPERATORS = frozenset({
    "$geoIntersects", "$geoWithin", "$near", "$nearSphere", "$bitsAllClear", "$bitsAllSet",
    "$bitsAnyClear", "$bitsAnySet", "$jsonSchema", "$sampleRate",
})


def stage(name: str) -> StoreError:
    return StoreError(40324, f"Unrecognized pipeline stage name: '{name}' (a MongoDB stage "
                             f"that {STORE} does not implement)")


def expression(name: str) -> StoreError:
    return StoreError(168, f"Unrecognized expression '{name}' (a MongoDB operator that "
                           f"{STORE} does not implement)")


def query_operator(name: str, top_level: bool) -> StoreError:
    where = "top level operator" if top_level else "operator"
    return StoreError(2, f"unknown {where}: {name} (a MongoDB query operator that {STORE} "
                         "does not implement)")
