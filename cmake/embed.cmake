# cmake -DINPUT=file -DOUTPUT=file.inc -DNAME=symbol -P embed.cmake
# Writes `static const char NAME[] = {0x.., ..., 0};`: a file embedded in
# the library byte for byte (the generated harness carries these verbatim).
file(READ "${INPUT}" hex HEX)
string(REGEX REPLACE "([0-9a-f][0-9a-f])" "0x\\1," bytes "${hex}")
string(REGEX REPLACE "(0x..,0x..,0x..,0x..,0x..,0x..,0x..,0x..,0x..,0x..,0x..,0x..,)" "\\1\n" bytes "${bytes}")
file(WRITE "${OUTPUT}.tmp" "/* Generated from ${INPUT}; do not edit. */\nstatic const char ${NAME}[] = {\n${bytes}0};\n")
file(COPY_FILE "${OUTPUT}.tmp" "${OUTPUT}" ONLY_IF_DIFFERENT)
file(REMOVE "${OUTPUT}.tmp")
